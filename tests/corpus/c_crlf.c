/* Rendered on Windows: every line ends in CR LF. */
#include <math.h>
#define SCALE_N7(x) \
  ((x) * 0.5f)
// n7_x is read, n8_tanh written \
   and this continued comment still names i1 and v2_y
void tanh_fwd(float *n8_tanh, const float *n7_x) {
  for (int i1 = 0; i1 <= 31; ++i1) {
    float v2_y = SCALE_N7(n7_x[i1]);
    n8_tanh[i1] = tanhf(v2_y); /* CR LF inside a block comment:
       n8_tanh */
  }
}
