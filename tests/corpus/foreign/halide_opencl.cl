// Halide-style OpenCL output.
#define halide_unused(x) (void)(x)
__kernel void _kernel_out_s0_y___block_id_y(__global float *_out, __global const float *_in, const int _out_extent_0) {
  int _out_s0_y___block_id_y = get_group_id(1);
  int _out_s0_x___thread_id_x = get_local_id(0);
  int _4 = _out_s0_y___block_id_y * _out_extent_0 + _out_s0_x___thread_id_x;
  float _5 = _in[_4];
  _out[_4] = _5 + 1.0f;
}
