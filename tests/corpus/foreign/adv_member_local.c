/* A local spelled like a member it accesses: the local is renamed, the member kept. */
struct pt { float x, y; };
void norm(struct pt *ps, float *out, int n) {
  for (int k = 0; k < n; k++) {
    float x = ps[k].x, y = ps[k].y;
    out[k] = x * x + y * y;
  }
}
