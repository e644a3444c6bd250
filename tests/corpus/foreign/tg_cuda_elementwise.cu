#define INFINITY (__int_as_float(0x7f800000))
#define NAN (__int_as_float(0x7fffffff))
extern "C" __global__ void __launch_bounds__(256) E_256_4(float* data0, const float* data1, const float* data2) {
  int gidx0 = blockIdx.x; /* 4 */
  int lidx0 = threadIdx.x; /* 256 */
  int alu0 = ((gidx0*256)+lidx0);
  float val0 = *(data1+alu0);
  float val1 = *(data2+alu0);
  float alu1 = (val0*val1);
  *(data0+alu0) = ((alu1<0.0f)?0.0f:alu1);
}
