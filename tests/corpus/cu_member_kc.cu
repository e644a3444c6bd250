// The launch config has members named kc2 and kc_1 (a user's struct): kept
// names spelled like canonical names. kc2 forces the marked form, and kc_1
// rules out the first marked prefix kc_, so the names move to kc__.
#include "user_config.cuh"
extern "C" __global__ void bias_add(float *n22_y, const float *n21_b, const struct user_cfg cfg) {
  const int i1 = blockIdx.x * cfg.kc2 + threadIdx.x;
  n22_y[i1] += n21_b[i1 % cfg.kc_1];
}
