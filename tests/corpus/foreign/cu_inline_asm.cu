// Hand-written CUDA: inline PTX. Names in asm operands are kept.
__global__ void lane_ids(unsigned* out) {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = lane;
}
