__kernel void E_4n1(__global float* data0, const __global float* data1) {
  int lidx0 = get_local_id(0); /* 4 */
  float4 val0 = vload4(0, data1+(lidx0<<2));
  float4 alu0 = (float4)((val0).x*2.0f,(val0).y*2.0f,(val0).z*2.0f,(val0).w*2.0f);
  vstore4(alu0, 0, data0+(lidx0<<2));
}
