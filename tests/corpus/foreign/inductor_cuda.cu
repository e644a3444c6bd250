// An Inductor-like CUDA kernel with xindex/xmask names.
extern "C" __global__ void triton_poi_fused_add_0(float* in_ptr0, float* out_ptr0, int xnumel) {
  int xoffset = blockIdx.x * 128;
  int xindex = xoffset + threadIdx.x;
  bool xmask = xindex < xnumel;
  int x0 = xindex;
  float tmp0 = xmask ? in_ptr0[x0] : 0.0f;
  float tmp1 = tmp0 + 1.0f;
  if (xmask) out_ptr0[x0] = tmp1;
}
