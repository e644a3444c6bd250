// Hand-written OpenCL C: a helper function beside the kernel.
float sigmoid(float z) { return 1.0f / (1.0f + exp(-z)); }
__kernel void act(__global float* v, int n) {
  int w = get_global_id(0);
  if (w < n) v[w] = sigmoid(v[w]);
}
