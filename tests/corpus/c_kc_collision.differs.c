/* GELU, tanh approximation. kc1 and kc2 are the prelude's constants: the
   kernel already spells names the way canonical names are spelled. */
#define kc1 0.7978845608f
#define kc2 0.044715f
void gelu_fwd(float *n21_gelu, const float *n20_x) {
  for (int i8 = 0; i8 <= 255; ++i8) {
    const float v11_x = n20_x[i8];
    const float v11_inner = kc2 * (v11_x + kc2 * v11_x * v11_x * v11_x);
    n21_gelu[i8] = 0.5f * v11_x * (1.0f + tanhf(v11_inner));
  }
}
