/* In C, half is an ordinary identifier, but it is an OpenCL and CUDA keyword:
   a node rendered as half in the bound list refuses bound renaming. */
void halve(float *half, const float *n2_x) {
  for (int i4 = 0; i4 <= 7; ++i4) half[i4] = 0.5f * n2_x[i4];
}
