/* layernorm, segment 0: per-row mean and variance into n64_stats. */
__kernel void layernorm__seg12(__global float2 *n64_stats, __global const float *n63_x) {
  const size_t i90 = get_global_id(0);
  float v150_mean = 0.0f, v150_m2 = 0.0f;
  for (int i91 = 0; i91 < 128; ++i91) {
    const float v160_d = n63_x[i90 * 128 + i91] - v150_mean;
    v150_mean += v160_d / (float)(i91 + 1);
    v150_m2 += v160_d * (n63_x[i90 * 128 + i91] - v150_mean);
  }
  n64_stats[i90] = (float2)(v150_mean, v150_m2 / 128.0f);
}
