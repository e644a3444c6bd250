#include <stdint.h>
#include "ocannl_prelude.h"
#define N12_W_SIZE 64
#define IDX2(i1, i2) \
  ((i1) * 8 + \
   (i2) + 1) /* i1, i2: macro parameters, kept */
#if defined(OCANNL_DEBUG) && OCANNL_DEBUG > 1
#  define TRACE(n12_w) fprintf(stderr, "n12_w=%p\n", (void *)n12_w)
#else
#  define TRACE(x)
#endif
  #pragma GCC ivdep
#pragma omp parallel for // i1 is the parallel axis

void relu_fwd(float *n13_relu, const float *n12_w) {
  TRACE(n12_w);
  for (int i1 = 0; i1 <= 7; ++i1) {
#pragma GCC unroll 8
    for (int i2 = 0; i2 <= 7; ++i2) {
      n13_relu[IDX2(i1, i2)] = n12_w[IDX2(i1, i2)] > 0.0f ? n12_w[IDX2(i1, i2)] : 0.0f;
    }
  }
# undef IDX2
}
