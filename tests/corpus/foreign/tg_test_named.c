void test(float* restrict data0_256, float* restrict data1_4096) {
  for (int ridx0 = 0; ridx0 < 256; ridx0++) {
    float acc0 = 0.0f;
    for (int ridx1 = 0; ridx1 < 16; ridx1++) {
      float val0 = data1_4096[(ridx0*16)+ridx1];
      acc0 = (acc0+val0);
    }
    data0_256[ridx0] = acc0;
  }
}
