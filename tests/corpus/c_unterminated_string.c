/* Broken render: unterminated string and char literals are error tokens that
   end at their line's end; the code on the following lines is code again. */
void neg_fwd(float *n7_neg, const float *n6_x) {
  const char *v1_msg = "n6_x i1 never closed;
  const char v1_c = 'i1;
  for (int i1 = 0; i1 <= 15; ++i1) n7_neg[i1] = -n6_x[i1];
}
