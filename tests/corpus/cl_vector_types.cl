// Vector types: swizzles and components after '.' are members (.xyzw, .s0,
// .lo, .hi, .even), never renamed.
__kernel void rgba_gray(__global uchar4 *n33_rgba, __global float *n34_gray) {
  const int i1 = get_global_id(0);
  const float4 v2_p = convert_float4(n33_rgba[i1]) / 255.0f;
  const float4 v2_w = (float4)(0.299f, 0.587f, 0.114f, 0.0f);
  float v2_g = dot(v2_p.xyz, v2_w.xyz);
  v2_g += v2_p.s0 * 0.0f + v2_p.lo.y * 0.0f + v2_p.even.x * 0.0f + v2_p.hi.s1 * 0.0f;
  n34_gray[i1] = clamp(v2_g, 0.0f, 1.0f);
  vstore4(v2_p.wzyx, i1, (__global float *)n34_gray);
}
