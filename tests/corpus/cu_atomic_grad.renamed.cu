/* Gradient scatter with atomics; launch parameters come through a struct
   whose members are reached with -> and . (never renamed). */
struct launch { int n; int stride; const int *rows; };
extern "C" __global__ void embed_bprop(float *n17_grad, const float *n18_out_grad,
                                      const struct launch *lp, const int *n16_idx) {
  for (int i12 = blockIdx.x * blockDim.x + threadIdx.x; i12 < lp->n; i12 += gridDim.x * blockDim.x) {
    const int v13_row = n16_idx[i12] * (*lp).stride;
    for (int i13 = 0; i13 < lp->stride; ++i13) {
      atomicAdd(&n17_grad[v13_row + i13], n18_out_grad[i12 * lp->stride + i13]);
    }
    (void)lp->rows;
  }
}
