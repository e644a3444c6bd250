/* Fissioned routine train_step: segment 3 of 5 (segments are named by
   position; the key keeps the routine, drops the index). */
void train_step__seg3(float *n12_w, const float *n12_w_grad, const float *n2_lr) {
  /* Local declarations and initialization. */
  const float t7 = n2_lr[0];

  /* Main logic. */
  for (int i11 = 0; i11 <= 127; ++i11) {
    n12_w[i11] -= t7 * n12_w_grad[i11];
  }
}
