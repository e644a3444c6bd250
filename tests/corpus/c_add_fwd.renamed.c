#include <stddef.h>

/* Pointwise add: n31_sum = n28_w + n4_x, broadcast over i17. */
void add_fwd(float *n31_sum, const float *n28_w, const float *n4_x) {
  /* Local declarations and initialization. */

  /* Main logic. */
  for (int i17 = 0; i17 <= 3; ++i17) {
    for (int i18 = 0; i18 <= 7; ++i18) {
      n31_sum[i17 * 8 + i18] = (n28_w[i18] + n4_x[i17 * 8 + i18]);
    }
  }
}
