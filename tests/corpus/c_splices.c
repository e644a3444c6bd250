/* Line splices (backslash-newline) wherever C honours them: inside renamed
   and kept identifiers, inside ->, before ., in a comment opener and closer. */
struct shape { int dims; int stride; };
void sum_fwd(float *n9_sum, const float *n8\
_x, const struct shape *sh) {
  float v2_\
total = 0.0f;
  for (int i\
4 = 0; i4 < sh-\
>dims * sh->\
stride; ++i4) {
    v2_total += n8_x[i4]; /\
* a comment whose opener is split: n8_x *\
/
  }
  n9_sum[0] = v2_total + (float)sh \
. dims + fl\
oorf(0.5f);
}
