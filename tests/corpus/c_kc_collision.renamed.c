/* GELU, tanh approximation. kc1 and kc2 are the prelude's constants: the
   kernel already spells names the way canonical names are spelled. */
#define kc1 0.7978845608f
#define kc2 0.044715f
void gelu_fwd(float *n61_gelu, const float *n60_x) {
  for (int i99 = 0; i99 <= 255; ++i99) {
    const float v3_x = n60_x[i99];
    const float v3_inner = kc1 * (v3_x + kc2 * v3_x * v3_x * v3_x);
    n61_gelu[i99] = 0.5f * v3_x * (1.0f + tanhf(v3_inner));
  }
}
