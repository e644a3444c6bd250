// Hand-written GLSL compute: vector types and constructors.
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, binding = 0) buffer Pix { vec4 pixels[]; };
layout(push_constant) uniform Dim { uint width; };
void main() {
  uvec2 p = gl_GlobalInvocationID.xy;
  uint off = p.y * width + p.x;
  vec4 c = pixels[off];
  pixels[off] = vec4(vec3(1.0) - c.rgb, c.a);
}
