/* A segment kernel whose debug output names it: the name inside the string is
   text, so the segment index stays in the canonical text there (another index
   is another kernel: it prints another message). */
__kernel void debug__seg1(__global const float *n5_x) {
  const size_t i1 = get_global_id(0);
  if (i1 == 0) printf("debug__seg1: n5_x[0]=%f\n", n5_x[0]);
}
