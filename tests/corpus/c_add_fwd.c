#include <stddef.h>

/* Pointwise add: n15_sum = n12_w + n7_x, broadcast over i1. */
void add_fwd(float *n15_sum, const float *n12_w, const float *n7_x) {
  /* Local declarations and initialization. */

  /* Main logic. */
  for (int i1 = 0; i1 <= 3; ++i1) {
    for (int i2 = 0; i2 <= 7; ++i2) {
      n15_sum[i1 * 8 + i2] = (n12_w[i2] + n7_x[i1 * 8 + i2]);
    }
  }
}
