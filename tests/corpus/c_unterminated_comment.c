/* Render interrupted mid-comment: the rest of the file is an unterminated
   block comment (an error token), renamed like any comment. */
void abs_fwd(float *n6_abs, const float *n5_x) {
  for (int i3 = 0; i3 <= 15; ++i3)
    n6_abs[i3] = fabsf(n5_x[i3]); /* i3 over n5_x, "quoted", it's
  }
}
