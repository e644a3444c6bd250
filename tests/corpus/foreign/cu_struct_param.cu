// Hand-written CUDA: parameters in a struct passed by value.
struct Params {
  int n;
  float alpha;
};
__global__ void scale_by(Params p, float* data) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < p.n) data[k] *= p.alpha;
}
