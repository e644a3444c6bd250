/* Legacy output in Latin-1: the literal holds the byte 0xE9, not UTF-8. */
#include <stdio.h>
void greet(const float *n2_x) {
  for (int i1 = 0; i1 < 1; ++i1) printf("café i2 %f\n", n2_x[i1]);
}
