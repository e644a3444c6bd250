// Tiled matmul n20_c = n18_a * n19_b, 16x16 tiles staged in shared memory.
// n57_tile_a and n58_tile_b are tile nodes minted by the tiling pass.
#define TILE 16
extern "C" __global__ void __launch_bounds__(256)
matmul_tiled(float *__restrict__ n20_c, const float *__restrict__ n18_a,
             const float *__restrict__ n19_b) {
  __shared__ float n57_tile_a[TILE][TILE];
  __shared__ float n58_tile_b[TILE][TILE];
  const int i1 = blockIdx.y * TILE + threadIdx.y;
  const int i2 = blockIdx.x * TILE + threadIdx.x;
  float v3_acc = 0.0f;
  for (int i3 = 0; i3 < 64; i3 += TILE) {
    n57_tile_a[threadIdx.y][threadIdx.x] = n18_a[i1 * 64 + i3 + threadIdx.x];
    n58_tile_b[threadIdx.y][threadIdx.x] = n19_b[(i3 + threadIdx.y) * 64 + i2];
    __syncthreads();
#pragma unroll
    for (int i4 = 0; i4 < TILE; ++i4) {
      v3_acc = fmaf(n57_tile_a[threadIdx.y][i4], n58_tile_b[i4][threadIdx.x], v3_acc);
    }
    __syncthreads();
  }
  n20_c[i1 * 64 + i2] = fmaxf(v3_acc, -INFINITY);
}
