// Inductor-style C++ (CPU) with C casts: `auto` locals bind like any other.
#include "cpp_prefix.h"
extern "C" void kernel(const float* in_ptr0, const float* in_ptr1, float* out_ptr0) {
  for (long x0 = 0L; x0 < 64L; x0 += 1L) {
    auto tmp0 = in_ptr0[(long)(x0)];
    auto tmp1 = in_ptr1[(long)(x0)];
    auto tmp2 = tmp0 + tmp1;
    auto tmp3 = std::max(tmp2, 0.0f);
    out_ptr0[(long)(x0)] = tmp3;
  }
}
