#include "prelude.h" /* declares the global counters i0 and v0_calls */
/* i0 and v0_calls match the symbol and scope-local patterns but are the
   prelude's globals: the renderer lists them in keep, so they stay. */
void count_fwd(float *n3_y) {
  for (int i1 = 0; i1 <= 3; ++i1) n3_y[i1] = (float)(i0 + i1);
  ++v0_calls;
}
