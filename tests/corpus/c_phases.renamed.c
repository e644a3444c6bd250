/* Phases 1 to 3 as GCC runs them: a backslash, blanks, then a newline is a
   splice; a lone CR ends a line (so the directive below ends there); %: opens
   a directive like #. */
%:define SCALE 2.0f
void scale_fwd(float *n9_y, const float *n8_x, int n) {
  for (int i\	
2 = 0; i2 < n; i2++) n9_y[i2] = n8_x[i2] * SCALE;#define i9 1}
