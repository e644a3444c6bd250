// The launch config has members named kc2 and kc_1 (a user's struct): kept
// names spelled like canonical names. kc2 forces the marked form, and kc_1
// rules out the first marked prefix kc_, so the names move to kc__.
#include "user_config.cuh"
extern "C" __global__ void bias_add(float *n92_y, const float *n91_b, const struct user_cfg cfg) {
  const int i15 = blockIdx.x * cfg.kc2 + threadIdx.x;
  n92_y[i15] += n91_b[i15 % cfg.kc_1];
}
