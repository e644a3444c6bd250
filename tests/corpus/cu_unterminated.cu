// Truncated render: an unterminated attribute on one line would swallow the
// rest, so this file ends with an unterminated raw string instead; both are
// error tokens running to the end of the input, kept byte for byte.
extern "C" __global__ void trunc_fwd(float *n3_y, const float *n2_x) {
  const int i1 = threadIdx.x;
  n3_y[i1] = n2_x[i1];
  const char *v5_s = R"tag(n2_x i1 )tag " never closed
}
