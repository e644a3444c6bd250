/* Halide-style C with a vector loop body and a let chain. */
void halide_scale(float *_output, const float *_input, int _t12, int _t13) {
  for (int _output_s0_x = 0; _output_s0_x < _t12; _output_s0_x++) {
    int _t14 = _output_s0_x * _t13;
    float _t15 = _input[_t14];
    float _t16 = _t15 * 3.0f;
    _output[_output_s0_x] = _t16;
  }
}
