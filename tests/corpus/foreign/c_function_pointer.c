/* Hand-written C: a callback parameter. */
void map(float *xs, int len, float (*fn)(float value)) {
  for (int q = 0; q < len; q++) xs[q] = fn(xs[q]);
}
