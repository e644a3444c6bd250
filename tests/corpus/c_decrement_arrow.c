/* A count-down loop written with -->, which C reads as -- then >. */
void countdown(float *n2_y) {
  int v1_k = 8;
  for (int i1 = 0; v1_k-->i1; ) n2_y[v1_k] = (float)i1;
}
