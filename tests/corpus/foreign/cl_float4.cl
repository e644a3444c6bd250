// Hand-written OpenCL C: vector types and swizzles.
kernel void axpy4(global float4* restrict y, global const float4* restrict x, float a) {
  size_t i = get_global_id(0);
  float4 v = x[i];
  y[i] = mad((float4)(a), v, y[i]);
  y[i].xy = y[i].yx;
}
