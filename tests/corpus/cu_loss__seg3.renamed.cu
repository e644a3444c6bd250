// Segment 3 of the fissioned routine "loss": block-wide sum of squared error.
#include <cuda_runtime.h>
extern "C" __global__ void loss__seg7(float *n77_loss, const float *n75_pred, const float *n76_target) {
  __shared__ float n77_loss_partial[32];
  const int i201 = blockIdx.x * blockDim.x + threadIdx.x;
  float v44_d = n75_pred[i201] - n76_target[i201];
  float v44_sq = v44_d * v44_d;
  for (int i202 = 16; i202 > 0; i202 >>= 1) v44_sq += __shfl_down_sync(0xffffffffu, v44_sq, i202);
  if ((threadIdx.x & 31) == 0) n77_loss_partial[threadIdx.x >> 5] = v44_sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t3 = 0.0f;
    for (int i203 = 0; i203 < (blockDim.x + 31) / 32; ++i203) t3 += n77_loss_partial[i203];
    atomicAdd(n77_loss, t3); // loss__seg7 accumulates into n77_loss
  }
}
