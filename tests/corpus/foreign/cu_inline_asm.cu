// Hand-written CUDA: inline PTX. An operand expression is code: `lane` is renamed.
__global__ void lane_ids(unsigned* out) {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = lane;
}
