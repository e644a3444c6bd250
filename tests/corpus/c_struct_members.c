#include "ocannl_shapes.h" /* struct dims { int i1, i2; }; struct ctx { struct dims stride; float *n10_x; }; */

/* Members keep their names even when spelled like symbols or bound names:
   after ., -> (comments and whitespace may stand between) nothing is renamed. */
void transpose_fwd(float *n11_t, const float *n10_x, const struct dims *d, struct ctx c) {
  for (int i1 = 0; i1 < d->i1; ++i1)
    for (int i2 = 0; i2 < d->i2; ++i2)
      n11_t[i2 * d->i1 + i1] = n10_x[i1 * c.stride.i2 + i2 * c . stride . i1] + c.n10_x[0];
  struct dims v5_d = { .i1 = d->i2, .i2 = d /* swapped */ -> i1 };
  (void)v5_d.i1;
  (void)(&v5_d)->/* i2 */
    i2;
  float f = 1.f, g = .5f, h = 1.e-3f; /* numbers with dots are not member access: i1 */
  (void)(f + g + h + (float)sizeof(struct dims));
}
