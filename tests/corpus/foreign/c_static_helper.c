/* Hand-written C: a static helper and a kernel. */
static inline float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }
void clamp_all(float *data, int count, float lo, float hi) {
  for (int e = 0; e < count; e++) data[e] = clampf(data[e], lo, hi);
}
