/* Non-ASCII and $ identifiers, as GCC accepts them: n3_ø is a bound
   node, v1_échelle a scope local, größe$max a free name with a $;
   $i1, i1$ and î1 are not symbols (a symbol is i then digits, nothing else). */
#include <math.h>
void softplus_ø(float *n4_out, const float *n3_ø, const float *poids_é) {
  for (int i1 = 0; i1 <= 7; ++i1) {
    float v1_échelle = poids_é[0];
    float n3_ø$tmp = n3_ø[i1] * v1_échelle;
    n4_out[i1] = log1pf(expf(n3_ø$tmp)) + größe$max + $i1 + i1$ + î1;
  }
}
/* Latin-1, not UTF-8, in a comment: caf� i1 */
