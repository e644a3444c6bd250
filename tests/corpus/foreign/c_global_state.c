/* Hand-written C: a file-scope counter keeps its name; a local that shares a
   name with a function called elsewhere does not bind that call. */
int calls;
float sqrt_scale(float *v, int n) {
  calls++;
  float norm = 0.0f;
  for (int z = 0; z < n; z++) norm += v[z] * v[z];
  return sqrtf(norm);
}
