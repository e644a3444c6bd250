/* A debugging macro stringizes its argument: `val` stays. */
#include <stdio.h>
#define SHOW(e) printf(#e " = %f\n", (double)(e))
void debug_sum(const float *xs, int n) {
  float val = 0.0f;
  for (int p = 0; p < n; p++) val += xs[p];
  SHOW(val);
}
