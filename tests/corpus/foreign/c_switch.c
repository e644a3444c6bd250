/* Hand-written C: a switch over an operation code. */
void apply(float *x, int n, int op) {
  for (int s = 0; s < n; s++) {
    float t = x[s];
    switch (op) {
    case 0: t = -t; break;
    case 1: t = t * t; break;
    default: break;
    }
    x[s] = t;
  }
}
