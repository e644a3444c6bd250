// Segment 3 of the fissioned routine "loss": block-wide sum of squared error.
#include <cuda_runtime.h>
extern "C" __global__ void loss__seg3(float *n31_loss, const float *n29_pred, const float *n30_target) {
  __shared__ float n31_loss_partial[32];
  const int i1 = blockIdx.x * blockDim.x + threadIdx.x;
  float v9_d = n29_pred[i1] - n30_target[i1];
  float v9_sq = v9_d * v9_d;
  for (int i2 = 16; i2 > 0; i2 >>= 1) v9_sq += __shfl_down_sync(0xffffffffu, v9_sq, i2);
  if ((threadIdx.x & 31) == 0) n31_loss_partial[threadIdx.x >> 5] = v9_sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t12 = 0.0f;
    for (int i3 = 0; i3 < (blockDim.x + 31) / 32; ++i3) t12 += n31_loss_partial[i3];
    atomicAdd(n31_loss, t12); // loss__seg3 accumulates into n31_loss
  }
}
