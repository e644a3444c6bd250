/* A node labelled "_Scale" is rendered under that name: _S... is the
   implementation's namespace (a predefined macro could spell it), so no bound
   name is renamed. n3_x stays too; i1 and v4_s are still renamed. */
void scale_fwd(float *n4_y, const float *n3_x, const float *_Scale) {
  for (int i1 = 0; i1 <= 9; ++i1) {
    const float v4_s = _Scale[0];
    n4_y[i1] = n3_x[i1] * v4_s;
  }
}
