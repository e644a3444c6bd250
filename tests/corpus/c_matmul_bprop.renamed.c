/* Backprop of n44_mm = n40_w * n38_x: accumulates n40_w's and n38_x's gradients.
   Don't reorder: n40_w_grad is read by the "sgd" kernel right after. */
void matmul_bprop(float *n40_w_grad, float *n38_x_grad, const float *n44_mm_grad,
                  const float *n40_w, const float *n38_x) {
  /* Local declarations and initialization. */
  float n40_w_grad_local[64] = {0};
  float v101_acc = 0.0f;

  /* Main logic. */
  for (int i30 = 0; i30 <= 7; ++i30) {
    for (int i31 = 0; i31 <= 7; ++i31) {
      v101_acc = 0.0f;
      for (int i32 = 0; i32 <= 15; ++i32) {
        /* d(n44_mm)/d(n40_w) = n38_x, summed over i32 */
        v101_acc += n44_mm_grad[i32 * 8 + i30] * n38_x[i32 * 8 + i31];
      }
      n40_w_grad_local[i30 * 8 + i31] += v101_acc;
    }
  }
  for (int i33 = 0; i33 <= 15; ++i33) {
    for (int i31 = 0; i31 <= 7; ++i31) {
      float v104_acc = 0.0f; // the scope local's suffix is part of its name
      for (int i30 = 0; i30 <= 7; ++i30) {
        v104_acc += n44_mm_grad[i33 * 8 + i30] * n40_w[i30 * 8 + i31];
      }
      n38_x_grad[i33 * 8 + i31] += v104_acc;
    }
  }
  for (int i35 = 0; i35 <= 63; ++i35) {
    n40_w_grad[i35] += n40_w_grad_local[i35];
  }
}
