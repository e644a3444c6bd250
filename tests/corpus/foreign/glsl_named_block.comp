// Hand-written GLSL compute: a named instance; its members stay.
#version 450
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Data { float v[]; } data;
void main() {
  uint n = gl_GlobalInvocationID.x;
  float cur = data.v[n];
  data.v[n] = cur * 0.5;
}
