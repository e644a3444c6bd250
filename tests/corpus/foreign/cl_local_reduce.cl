// Hand-written OpenCL C: a work-group reduction in local memory.
__kernel void reduce(__global const float* input, __global float* partial, __local float* scratch, int length) {
  int gid = get_global_id(0);
  int lid = get_local_id(0);
  scratch[lid] = gid < length ? input[gid] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int offset = get_local_size(0) / 2; offset > 0; offset >>= 1) {
    if (lid < offset) scratch[lid] += scratch[lid + offset];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
