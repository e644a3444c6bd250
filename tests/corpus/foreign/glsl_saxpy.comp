// Hand-written GLSL compute: anonymous buffer blocks.
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float xs[]; };
layout(std430, binding = 1) buffer Y { float ys[]; };
layout(push_constant) uniform Push { float alpha; uint count; };
void main() {
  uint gi = gl_GlobalInvocationID.x;
  if (gi < count) ys[gi] = alpha * xs[gi] + ys[gi];
}
