#include <math.h>
/* A tensor node labelled "exp" is rendered as exp, the libm function's name:
   the renderer lists it in bound and the prelude's names in free, so the two
   meet and no bound name may be renamed. Symbols and scope locals still are. */
void exp_fwd(float *exp, const float *n30_x) {
  for (int i40 = 0; i40 <= 15; ++i40) {
    float v17_t = n30_x[i40];
    float exp_local = expf(v17_t);
    exp[i40] = exp_local;
  }
}
