// Qualified names: whatever follows :: is never renamed, even when it is
// spelled like a symbol, a scope local or a bound name (ocannl_consts.cuh
// declares namespace ocannl::i1 with a constant n7_x and a function v4_a).
#include <cuda/std/cmath>
#include <cuda_fp16.h>
#include "ocannl_consts.cuh"
extern "C" __global__ void qualified_fwd(float *n8_y, const float *n7_x) {
  const int i1 = threadIdx.x;
  const float v4_a = ::cuda::std::fmax(n7_x[i1], ocannl::i1::n7_x);
  const float v4_b = ::fabsf(v4_a) + static_cast<float>(ocannl :: /* spaced */ i1 ::n7_x)
                   + ocannl::i1::v4_a(i1);
  n8_y[i1] = cuda::std::sqrt(v4_b) + __half2float(__float2half(v4_a));
}
