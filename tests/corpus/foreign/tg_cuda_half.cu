#include <cuda_fp16.h>
extern "C" __global__ void __launch_bounds__(64) E_64_2(half* data0, const half* data1) {
  int lidx0 = threadIdx.x; /* 64 */
  half2 val0 = *((half2*)((data1+(lidx0*2))));
  *((half2*)((data0+(lidx0*2)))) = make_half2((val0.x+val0.y),(val0.y+val0.x));
}
