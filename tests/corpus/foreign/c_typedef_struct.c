/* Hand-written C: a typedef'd struct; the typedef name stays. */
typedef struct { float re, im; } cplx;
void cmul(cplx *out, const cplx *x, const cplx *y, int n) {
  for (int r = 0; r < n; r++) {
    cplx p = x[r], q = y[r];
    out[r].re = p.re * q.re - p.im * q.im;
    out[r].im = p.re * q.im + p.im * q.re;
  }
}
