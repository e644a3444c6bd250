// 3x3 convolution, stride 1, no padding: n15_conv = n13_img (*) n14_k.
// Loop symbols i1..i6 are static indices; KH and KW are macros, kept.
#define KH 3
#define KW 3
#define AT(img, i1, i2) (img)[(i1) * 34 + (i2)] /* macro parameters: kept */

__kernel void conv2d_fwd(__global float *n15_conv, __global const float *n13_img,
                         __constant float *n14_k) {
  const int i1 = get_global_id(1);
  const int i2 = get_global_id(0);
  float v7_acc = 0.0f;
#pragma unroll
  for (int i3 = 0; i3 < KH; ++i3) {
#pragma unroll
    for (int i4 = 0; i4 < KW; ++i4) {
      v7_acc = mad(AT(n13_img, i1 + i3, i2 + i4), n14_k[i3 * KW + i4], v7_acc);
    }
  }
  n15_conv[i1 * 32 + i2] = v7_acc;
  for (int i5 = 0, i6 = 1; i5 < 2; ++i5, i6 <<= 1) {
    if (get_global_id(2) == (size_t)i5) n15_conv[i1 * 32 + i2] *= (float)i6;
  }
}
