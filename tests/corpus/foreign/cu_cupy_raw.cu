// A CuPy RawKernel: `extern "C"`, short names, a dim check.
extern "C" __global__
void my_add(const float* x1, const float* x2, float* y, int N) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (tid < N) { y[tid] = x1[tid] + x2[tid]; }
}
