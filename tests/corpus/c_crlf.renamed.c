/* Rendered on Windows: every line ends in CR LF. */
#include <math.h>
#define SCALE_N7(x) \
  ((x) * 0.5f)
// n70_x is read, n80_tanh written \
   and this continued comment still names i55 and v9_y
void tanh_fwd(float *n80_tanh, const float *n70_x) {
  for (int i55 = 0; i55 <= 31; ++i55) {
    float v9_y = SCALE_N7(n70_x[i55]);
    n80_tanh[i55] = tanhf(v9_y); /* CR LF inside a block comment:
       n80_tanh */
  }
}
