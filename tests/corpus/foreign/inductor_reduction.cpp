// Inductor-style C++ (CPU): a reduction with an accumulator.
extern "C" void kernel(const float* in_ptr0, float* out_ptr0) {
  for (long x0 = 0L; x0 < 8L; x0 += 1L) {
    float tmp_acc0 = 0;
    for (long r0 = 0L; r0 < 32L; r0 += 1L) {
      auto tmp0 = in_ptr0[(long)(r0 + 32L * x0)];
      tmp_acc0 = tmp_acc0 + tmp0;
    }
    out_ptr0[(long)(x0)] = tmp_acc0;
  }
}
