// Tiled matmul n120_c = n118_a * n119_b, 16x16 tiles staged in shared memory.
// n301_tile_a and n302_tile_b are tile nodes minted by the tiling pass.
#define TILE 16
extern "C" __global__ void __launch_bounds__(256)
matmul_tiled(float *__restrict__ n120_c, const float *__restrict__ n118_a,
             const float *__restrict__ n119_b) {
  __shared__ float n301_tile_a[TILE][TILE];
  __shared__ float n302_tile_b[TILE][TILE];
  const int i81 = blockIdx.y * TILE + threadIdx.y;
  const int i82 = blockIdx.x * TILE + threadIdx.x;
  float v61_acc = 0.0f;
  for (int i83 = 0; i83 < 64; i83 += TILE) {
    n301_tile_a[threadIdx.y][threadIdx.x] = n118_a[i81 * 64 + i83 + threadIdx.x];
    n302_tile_b[threadIdx.y][threadIdx.x] = n119_b[(i83 + threadIdx.y) * 64 + i82];
    __syncthreads();
#pragma unroll
    for (int i84 = 0; i84 < TILE; ++i84) {
      v61_acc = fmaf(n301_tile_a[threadIdx.y][i84], n302_tile_b[i84][threadIdx.x], v61_acc);
    }
    __syncthreads();
  }
  n120_c[i81 * 64 + i82] = fmaxf(v61_acc, -INFINITY);
}
