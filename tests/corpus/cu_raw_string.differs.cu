// Inline PTX through C++ raw strings: the body is opaque, including a )" that
// does not close it (only )ptx" does), and names such as n3_x or i1 inside.
extern "C" __global__ void fast_rcp(float *n4_rcp, const float *n3_x) {
  const int i1 = blockIdx.x * blockDim.x + threadIdx.x;
  float v2_r;
  asm volatile(R"ptx(
    // n3_x[i1] is "%1" here )" still inside
    rcp.approx.f32 %0, %1;
  )ptx" : "=f"(v2_r) : "f"(n3_x[i1]));
  const char *v2_note = u8R"(i1 "quoted" \n not an escape)";
  const wchar_t *v2_wide = LR"d(n4_rcp)d";
  n4_rcp[i1] = v2_r + (v2_note[0] == 'i') + (v2_wide[0] == L'n');
}
