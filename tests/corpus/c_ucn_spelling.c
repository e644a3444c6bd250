/* One identifier spelled with a UCN and in UTF-8: C makes them one name. */
void ucn_fwd(float *n2_\u00e9, const float *n1_x) {
  for (int i1 = 0; i1 < 4; ++i1) n2_é[i1] = n1_x[i1];
}
