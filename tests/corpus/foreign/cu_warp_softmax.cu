// Hand-written CUDA: a warp-per-row softmax with shuffles.
__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, off));
  return __shfl_sync(0xffffffff, v, 0);
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
  return __shfl_sync(0xffffffff, v, 0);
}
__global__ void softmax_rows(const float* x, float* y, int cols) {
  const float* row = x + blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += 32) m = fmaxf(m, row[c]);
  m = warp_max(m);
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += 32) s += __expf(row[c] - m);
  s = warp_sum(s);
  for (int c = threadIdx.x; c < cols; c += 32) y[blockIdx.x * cols + c] = __expf(row[c] - m) / s;
}
