// CUDA C++ attributes: [[...]] is opaque (names inside are never renamed),
// while nested subscripts such as n4_idx[n3_perm[i1]] are ordinary code.
#include <cuda_runtime.h>
[[nodiscard]] __device__ inline float clamp01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }
extern "C" __global__ void gather_fwd(float *n5_out, const float *n4_idx, const int *n3_perm) {
  [[maybe_unused]] const int v1_lane = threadIdx.x & 31;
  const int i1 = blockIdx.x * blockDim.x + threadIdx.x;
  if (i1 >= 1024) [[unlikely]] return;
  [[gnu::aligned(32), deprecated("use n4_idx[i1] directly: \"i1]]\"")]] float n5_out_local[4];
  n5_out_local[0] = n4_idx[n3_perm[i1]];
  n5_out[i1] = clamp01(n5_out_local[0]) + n4_idx[n3_perm[n3_perm[i1]]];
}
