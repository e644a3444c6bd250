/* Hand-written C with OpenMP: the pragma names `acc`, so it is kept. */
#include <stddef.h>
void dot(const double *a, const double *b, size_t n, double *result) {
  double acc = 0.0;
#pragma omp parallel for reduction(+ : acc)
  for (size_t j = 0; j < n; j++) acc += a[j] * b[j];
  *result = acc;
}
