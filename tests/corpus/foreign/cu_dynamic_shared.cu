// Hand-written CUDA: dynamic shared memory is `extern`, so it keeps its name.
extern "C" __global__ void stage_copy(const float* src, float* dst, int n) {
  extern __shared__ float smem[];
  int t = threadIdx.x;
  int g = blockIdx.x * blockDim.x + t;
  smem[t] = g < n ? src[g] : 0.0f;
  __syncthreads();
  if (g < n) dst[g] = smem[blockDim.x - 1 - t];
}
