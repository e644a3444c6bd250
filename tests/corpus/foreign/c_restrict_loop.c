/* Hand-written C: a restrict-qualified loop. */
void scale_add(float *restrict dst, const float *restrict src, float k, long n) {
  for (long idx = 0; idx < n; ++idx) dst[idx] += k * src[idx];
}
