/* layernorm, segment 0: per-row mean and variance into n24_stats. */
__kernel void layernorm__seg0(__global float2 *n24_stats, __global const float *n23_x) {
  const size_t i9 = get_global_id(0);
  float v15_mean = 0.0f, v15_m2 = 0.0f;
  for (int i10 = 0; i10 < 128; ++i10) {
    const float v16_d = n23_x[i9 * 128 + i10] - v15_mean;
    v15_mean += v16_d / (float)(i10 + 1);
    v15_m2 += v16_d * (n23_x[i9 * 128 + i10] - v15_mean);
  }
  n24_stats[i9] = (float2)(v15_mean, v15_m2 / 128.0f);
}
