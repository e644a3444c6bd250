// Hand-written OpenCL C: an attribute on the kernel.
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void square(__global float* buf, int n) {
  int g = get_global_id(0);
  if (g < n) buf[g] = buf[g] * buf[g];
}
