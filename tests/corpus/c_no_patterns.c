/* User-written kernel that does not follow the renderer's conventions: i1 is
   a global from the user's header and v2_x a user macro, so neither pattern
   class applies. t7 is still derived (from digits) and renamed; ti1 is not,
   since with symbols off i1 is no base. */
extern float i1;
void user_axpy(float *y, const float *x, int n) {
  float t7 = i1;
  float ti1 = t7 * 2.0f;
  for (int k = 0; k < n; ++k) y[k] = v2_x(ti1, x[k]) + y[k];
}
