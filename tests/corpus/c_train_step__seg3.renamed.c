/* Fissioned routine train_step: segment 3 of 5 (segments are named by
   position; the key keeps the routine, drops the index). */
void train_step__seg7(float *n52_w, const float *n52_w_grad, const float *n3_lr) {
  /* Local declarations and initialization. */
  const float t19 = n3_lr[0];

  /* Main logic. */
  for (int i40 = 0; i40 <= 127; ++i40) {
    n52_w[i40] -= t19 * n52_w_grad[i40];
  }
}
