// Truncated render inside an attribute: [[ with no ]] runs to the end of the
// input as an error token: n2_x and i1 after it are kept as written.
extern "C" __global__ void trunc_attr(float *n3_y, const float *n2_x) {
  const int i1 = threadIdx.x;
  [[maybe_unused, deprecated("n2_x")
  float v6_t = n2_x[i1];
  n3_y[i1] = v6_t;
}
