/* A trigraph: with -std=c99 GCC reads ??/ as a backslash, so the comment
   line below continues into the next one; the lexer cannot know: raw keyed. */
void tri_fwd(float *n2_y) {
  // is this the end??/
  n2_y[0] = 1.0f;
}
