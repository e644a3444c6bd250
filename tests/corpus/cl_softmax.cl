/* Row softmax over 64 columns, one work-group per row. n9_max_local and
   n9_sum_local are the emitter's derived locals in __local memory. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void softmax_fwd(__global float *restrict n10_softmax, __global const float *restrict n9_logits) {
  __local float n9_max_local[64];
  __local float n9_sum_local[64];
  const size_t i1 = get_group_id(0);
  const size_t i2 = get_local_id(0);
  float v4_x = n9_logits[i1 * 64 + i2];
  n9_max_local[i2] = v4_x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i3 = 32; i3 > 0; i3 >>= 1) {
    if (i2 < i3) n9_max_local[i2] = fmax(n9_max_local[i2], n9_max_local[i2 + i3]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float v4_e = native_exp(v4_x - n9_max_local[0]);
  n9_sum_local[i2] = v4_e;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i3 = 32; i3 > 0; i3 >>= 1) {
    if (i2 < i3) n9_sum_local[i2] += n9_sum_local[i2 + i3];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  n10_softmax[i1 * 64 + i2] = native_divide(v4_e, n9_sum_local[0]);
}
