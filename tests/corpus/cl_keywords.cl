/* OpenCL C without the __ prefixes: kernel, global, local, constant and half
   are keywords here, never renamed. */
kernel void scale_half(global half *n44_y, constant float *n43_s, local float *n44_y_local) {
  const size_t i1 = get_local_id(0);
  private float v3_s = n43_s[0];
  n44_y_local[i1] = vload_half(i1, n44_y) * v3_s;
  barrier(CLK_LOCAL_MEM_FENCE);
  vstore_half(n44_y_local[i1], i1, n44_y);
}
