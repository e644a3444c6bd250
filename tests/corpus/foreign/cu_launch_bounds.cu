// Hand-written CUDA: launch bounds and a restrict-qualified pointer to const.
extern "C" __global__ void __launch_bounds__(128, 4) relu_inplace(float* __restrict__ buf, const int count) {
  const int idx = blockIdx.x * 128 + threadIdx.x;
  if (idx >= count) return;
  const float v = buf[idx];
  buf[idx] = v > 0.f ? v : 0.f;
}
