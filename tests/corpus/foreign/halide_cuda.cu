// Halide-style CUDA output: `_`-numbered temporaries, block and thread ids.
extern "C" __global__ void kernel_f_s0_y_y___block_id_y(float *_f, const float *_g, int _f_min_0, int _f_stride_1) {
  int _f_s0_y_y___block_id_y = blockIdx.y;
  int _f_s0_x_x___thread_id_x = threadIdx.x;
  int _27 = _f_s0_y_y___block_id_y * _f_stride_1;
  int _28 = _27 + _f_s0_x_x___thread_id_x - _f_min_0;
  float _29 = _g[_28];
  _f[_28] = _29 * _29;
}
