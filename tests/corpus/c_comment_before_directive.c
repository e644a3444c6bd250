/* prelude */ #include <i1.h>
void k(float *n2_y) {
  for (int i1 = 0; i1 < 2; ++i1) n2_y[i1] = 0.0f;
}
