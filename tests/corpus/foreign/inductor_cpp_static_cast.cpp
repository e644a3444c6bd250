// Inductor-style C++ (CPU): static_cast is C++ the grammar does not parse,
// so every name is kept as written.
#include "cpp_prefix.h"
extern "C" void kernel(const float* in_ptr0, float* out_ptr0) {
  #pragma omp parallel for
  for (long x0 = static_cast<long>(0L); x0 < static_cast<long>(16L); x0 += static_cast<long>(1L)) {
    auto tmp0 = in_ptr0[static_cast<long>(x0)];
    auto tmp1 = std::exp(tmp0);
    out_ptr0[static_cast<long>(x0)] = tmp1;
  }
}
