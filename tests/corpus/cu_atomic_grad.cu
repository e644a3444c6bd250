/* Gradient scatter with atomics; launch parameters come through a struct
   whose members are reached with -> and . (never renamed). */
struct launch { int n; int stride; const int *rows; };
extern "C" __global__ void embed_bprop(float *n7_grad, const float *n8_out_grad,
                                      const struct launch *lp, const int *n6_idx) {
  for (int i2 = blockIdx.x * blockDim.x + threadIdx.x; i2 < lp->n; i2 += gridDim.x * blockDim.x) {
    const int v3_row = n6_idx[i2] * (*lp).stride;
    for (int i3 = 0; i3 < lp->stride; ++i3) {
      atomicAdd(&n7_grad[v3_row + i3], n8_out_grad[i2 * lp->stride + i3]);
    }
    (void)lp->rows;
  }
}
