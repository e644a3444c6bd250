// Hand-written GLSL compute: shared memory and barriers.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer In { float vals[]; };
layout(std430, binding = 1) writeonly buffer Out { float sums[]; };
shared float part[64];
void main() {
  uint li = gl_LocalInvocationID.x;
  part[li] = vals[gl_GlobalInvocationID.x];
  barrier();
  for (uint stride = 32u; stride > 0u; stride >>= 1) {
    if (li < stride) part[li] += part[li + stride];
    barrier();
  }
  if (li == 0u) sums[gl_WorkGroupID.x] = part[0];
}
