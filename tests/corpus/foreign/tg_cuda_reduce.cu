extern "C" __global__ void __launch_bounds__(32) r_32_16_4(float* data0, const float* data1) {
  int gidx0 = blockIdx.x; /* 32 */
  int lidx0 = threadIdx.x; /* 16 */
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 4; ridx0++) {
    float val0 = *(data1+(gidx0*64)+(lidx0*4)+ridx0);
    acc0 = (acc0+val0);
  }
  *(data0+(gidx0*16)+lidx0) = acc0;
}
