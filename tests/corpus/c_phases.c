/* Phases 1 to 3 as GCC runs them: a backslash, blanks, then a newline is a
   splice; a lone CR ends a line (so the directive below ends there); %: opens
   a directive like #. */
%:define SCALE 2.0f
void scale_fwd(float *n5_y, const float *n4_x, int n) {
  for (int i\   
7 = 0; i7 < n; i7++) n5_y[i7] = n4_x[i7] * SCALE;#define i9 1}
