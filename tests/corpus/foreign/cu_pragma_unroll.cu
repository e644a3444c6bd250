// Hand-written CUDA: `#pragma unroll` and a named loop bound macro.
#define UNROLL 4
__global__ void dot4(const float4* a, const float4* b, float* out, int n4) {
  float acc = 0.0f;
  int base = blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    int q = base + u * blockDim.x;
    if (q < n4) {
      float4 va = a[q], vb = b[q];
      acc += va.x * vb.x + va.y * vb.y + va.z * vb.z + va.w * vb.w;
    }
  }
  atomicAdd(out, acc);
}
