/* Derivation templates *_local, t* and tmp_*_acc: a derived name is renamed
   when its base is a bound name (n5_x_local), a symbol (tmp_i3_acc, ti3) or
   digits (t42); with any other base (n6_y_local, tx, tmp__acc) it is kept. \
   This line still belongs to the comment above, so is this: t42 n5_x_local */
// A line comment continued by a backslash-newline: t42 tmp_i3_acc n6_y_local \
   (this is the continuation: ti3 t, tx)
void deriv_fwd(float *n5_x, float *n6_y) {
  float n5_x_local = n5_x[0];
  float t42 = 0.0f, t = 1.0f, tx = 2.0f, tmp__acc = 3.0f;
  for (int i3 = 0; i3 <= 3; ++i3) {
    float tmp_i3_acc = n5_x_local * (float)i3, ti3 = tmp_i3_acc;
    t42 += tmp_i3_acc + ti3;
  }
  float n6_y_local = t42 + t + tx + tmp__acc;
  n6_y[0] = n6_y_local;
}
