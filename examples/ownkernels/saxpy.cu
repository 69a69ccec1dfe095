// saxpy.cu: y = a*x + y over n floats, one thread an element: the guide's
// first kernel of one's own ("Your own kernels", docs/guide.md).
// make example-ptx compiles it into saxpy.ptx (nvcc -ptx, compute_70).
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
