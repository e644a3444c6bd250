#include <math.h>
#include <stdint.h>

/* SGD with momentum and weight decay for n12_w; t41 and t42 are virtual
   nodes inlined by the emitter, i3 runs over the 64 weights. */
void sgd_update(float *n12_w, float *n12_w_sgd_momentum, const float *n12_w_grad,
                const float *learning_rate, const float *n5_wd) {
  /* Local declarations and initialization. */
  const float t41 = learning_rate[0];
  float t42;

  /* Main logic. */
  for (int i3 = 0; i3 <= 63; ++i3) {
    t42 = fmaf(n5_wd[0], n12_w[i3], n12_w_grad[i3]);
    n12_w_sgd_momentum[i3] = 0.9f * n12_w_sgd_momentum[i3] + t42;
    n12_w[i3] = n12_w[i3] - t41 * n12_w_sgd_momentum[i3];
    if (isnan(n12_w[i3])) n12_w[i3] = 0x0p+0f;
  }
}
