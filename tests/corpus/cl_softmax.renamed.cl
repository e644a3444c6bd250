/* Row softmax over 64 columns, one work-group per row. n109_max_local and
   n109_sum_local are the emitter's derived locals in __local memory. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void softmax_fwd(__global float *restrict n110_softmax, __global const float *restrict n109_logits) {
  __local float n109_max_local[64];
  __local float n109_sum_local[64];
  const size_t i31 = get_group_id(0);
  const size_t i32 = get_local_id(0);
  float v14_x = n109_logits[i31 * 64 + i32];
  n109_max_local[i32] = v14_x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i33 = 32; i33 > 0; i33 >>= 1) {
    if (i32 < i33) n109_max_local[i32] = fmax(n109_max_local[i32], n109_max_local[i32 + i33]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float v14_e = native_exp(v14_x - n109_max_local[0]);
  n109_sum_local[i32] = v14_e;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i33 = 32; i33 > 0; i33 >>= 1) {
    if (i32 < i33) n109_sum_local[i32] += n109_sum_local[i32 + i33];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  n110_softmax[i31 * 64 + i32] = native_divide(v14_e, n109_sum_local[0]);
}
