/* Backprop of n9_mm = n12_w * n3_x: accumulates n12_w's and n3_x's gradients.
   Don't reorder: n12_w_grad is read by the "sgd" kernel right after. */
void matmul_bprop(float *n12_w_grad, float *n3_x_grad, const float *n9_mm_grad,
                  const float *n12_w, const float *n3_x) {
  /* Local declarations and initialization. */
  float n12_w_grad_local[64] = {0};
  float v5_acc = 0.0f;

  /* Main logic. */
  for (int i4 = 0; i4 <= 7; ++i4) {
    for (int i5 = 0; i5 <= 7; ++i5) {
      v5_acc = 0.0f;
      for (int i6 = 0; i6 <= 15; ++i6) {
        /* d(n9_mm)/d(n12_w) = n3_x, summed over i6 */
        v5_acc += n9_mm_grad[i6 * 8 + i4] * n3_x[i6 * 8 + i5];
      }
      n12_w_grad_local[i4 * 8 + i5] += v5_acc;
    }
  }
  for (int i7 = 0; i7 <= 15; ++i7) {
    for (int i5 = 0; i5 <= 7; ++i5) {
      float v8_acc = 0.0f; // the scope local's suffix is part of its name
      for (int i4 = 0; i4 <= 7; ++i4) {
        v8_acc += n9_mm_grad[i7 * 8 + i4] * n12_w[i4 * 8 + i5];
      }
      n3_x_grad[i7 * 8 + i5] += v8_acc;
    }
  }
  for (int i9 = 0; i9 <= 63; ++i9) {
    n12_w_grad[i9] += n12_w_grad_local[i9];
  }
}
