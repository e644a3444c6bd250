/* Hand-written C: shadowing in nested blocks; every `t` is the kernel's. */
void shadow(float *out, int n) {
  float t = 1.0f;
  for (int u = 0; u < n; u++) {
    float t = (float)u;
    out[u] = t;
  }
  { int t = 2; out[0] += t; }
  out[1] = t;
}
