/* Hand-written C: labels and goto. */
int find_first(const int *v, int n, int key) {
  int pos = 0;
again:
  if (pos >= n) goto missing;
  if (v[pos] == key) return pos;
  pos++;
  goto again;
missing:
  return -1;
}
