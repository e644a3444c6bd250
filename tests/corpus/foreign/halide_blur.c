/* Halide-style C output: numbered temporaries and a buffer struct. */
#include <stdint.h>
struct halide_buffer { uint8_t *host; int32_t stride_1; int32_t extent_0; };
int blur_x(struct halide_buffer *_input_buffer, struct halide_buffer *_blur_buffer) {
  float *_input = (float *)(_input_buffer->host);
  float *_blur = (float *)(_blur_buffer->host);
  int32_t _0 = _input_buffer->extent_0;
  for (int _blur_s0_x = 0; _blur_s0_x < _0 - 2; _blur_s0_x++) {
    float _17 = _input[_blur_s0_x];
    float _18 = _input[_blur_s0_x + 1];
    float _19 = _input[_blur_s0_x + 2];
    float _20 = _17 + _18 + _19;
    _blur[_blur_s0_x] = _20 * 0.333333f;
  }
  return 0;
}
