// Hand-written OpenCL C: a file-scope sampler (a file-scope name keeps its name).
__constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;
__kernel void blur(__read_only image2d_t src, __write_only image2d_t dst) {
  int2 pos = (int2)(get_global_id(0), get_global_id(1));
  float4 sum = (float4)(0.0f);
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      sum += read_imagef(src, smp, pos + (int2)(dx, dy));
  write_imagef(dst, pos, sum / 9.0f);
}
