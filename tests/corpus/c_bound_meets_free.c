#include <math.h>
/* A tensor node labelled "exp" is rendered as exp, the libm function's name:
   the renderer lists it in bound and the prelude's names in free, so the two
   meet and no bound name may be renamed. Symbols and scope locals still are. */
void exp_fwd(float *exp, const float *n30_x) {
  for (int i2 = 0; i2 <= 15; ++i2) {
    float v6_t = n30_x[i2];
    float exp_local = expf(v6_t);
    exp[i2] = exp_local;
  }
}
