/* Hand-written C: do-while and a comma in a for header. */
unsigned popcount_all(const unsigned *w, int n) {
  unsigned total = 0;
  for (int a = 0, b = n - 1; a <= b; a++) {
    unsigned bits = w[a];
    do { total += bits & 1u; bits >>= 1; } while (bits);
  }
  return total;
}
