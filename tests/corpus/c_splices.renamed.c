/* Line splices (backslash-newline) wherever C honours them: inside renamed
   and kept identifiers, inside ->, before ., in a comment opener and closer. */
struct shape { int dims; int stride; };
void sum_fwd(float *n19_sum, const float *n18_x, const struct shape *sh) {
  float v7_total = 0.0f;
  for (int i24 = 0; i24 < sh-\
>dims * sh->\
stride; ++i24) {
    v7_total += n18_x[i24]; /\
* a comment whose opener is split: n18_x *\
/
  }
  n19_sum[0] = v7_total + (float)sh \
. dims + fl\
oorf(0.5f);
}
