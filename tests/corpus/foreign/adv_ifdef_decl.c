/* A declaration under #ifdef may not exist: its name stays. */
void cond(float *out, int n) {
#ifdef USE_BIAS
  float bias = 0.5f;
#endif
  for (int m = 0; m < n; m++) out[m] = (float)m
#ifdef USE_BIAS
    + bias
#endif
    ;
}
