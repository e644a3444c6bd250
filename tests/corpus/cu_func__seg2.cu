// __func__ spells the segment index, so this kernel is keyed on its raw text
// and its full name: another index is another key.
extern "C" __global__ void loss__seg2(float *n3_out, const float *n2_in) {
  const int i1 = threadIdx.x;
  if (i1 == 0) printf("%s\n", __func__);
  n3_out[i1] = n2_in[i1];
}
