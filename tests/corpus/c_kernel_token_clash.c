/* Segment 2 of "relu" calls a helper that happens to be spelled like the
   kernel token relu__seg: the canonical text must not read it as the kernel's
   own name, so the canonical names move to a marked prefix. */
static inline float relu__seg(float v) { return v > 0.0f ? v : 0.0f; }
void relu__seg2(float *n14_relu, const float *n13_x) {
  for (int i5 = 0; i5 <= 63; ++i5) n14_relu[i5] = relu__seg(n13_x[i5]);
}
