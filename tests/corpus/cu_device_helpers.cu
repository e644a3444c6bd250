// A device-function library rendered with the kernels; it has no kernel
// name of its own, so no kernel token. v1_x and i2 are still renamed.
#pragma once
__device__ __forceinline__ float sigmoid_v(float v1_x) { return 1.0f / (1.0f + __expf(-v1_x)); }
__device__ __forceinline__ float warp_sum(float v1_x) {
  #pragma unroll
  for (int i2 = 16; i2 > 0; i2 /= 2) v1_x += __shfl_xor_sync(0xffffffff, v1_x, i2, 32);
  return v1_x;
}
