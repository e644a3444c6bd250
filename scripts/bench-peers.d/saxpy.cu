extern "C" __global__ void saxpy__seg0(float* n1_y, const float* n2_x, int n) {
  for (int i1 = blockIdx.x * blockDim.x + threadIdx.x; i1 < n; i1 += blockDim.x * gridDim.x) n1_y[i1] += 2.0f * n2_x[i1];
}
