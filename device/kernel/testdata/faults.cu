// faults.cu: kernels with the bugs package kernel's tests must see
// reported on sim and the emulated driver, each with its kernel's name,
// PTX line and argument, and an empty kernel for the launch-overhead
// benchmark. make example-ptx compiles it into faults.ptx (nvcc -ptx,
// compute_70).

// scale_past_end scales x[0..n] by a: one element past the array's end.
extern "C" __global__ void scale_past_end(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        x[i] *= a;
    }
}

// add_into_input adds x into y and then clears x, which its launch
// declares read-only.
extern "C" __global__ void add_into_input(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] += x[i];
        ((float *)x)[i] = 0.0f;
    }
}

// fill sets x[0..n) to v.
extern "C" __global__ void fill(float *x, float v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = v;
    }
}

// empty does nothing with its three arrays: the launch's own cost.
extern "C" __global__ void empty(float *a, float *b, float *c) {}

// load_misaligned copies into y[i] the float that starts one byte into
// x[i]: a misaligned 4-byte load.
extern "C" __global__ void load_misaligned(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = *(const float *)((const char *)(x + i) + 1);
    }
}

// hang_at_barrier sends each block's thread 0 to barrier 1 and the rest
// of its block to barrier 0 (__syncthreads()), each expecting the whole
// block, then sets x[0..n) to 1: neither barrier can complete. (A thread
// that returned instead would release the barrier: the ISA's exit.)
extern "C" __global__ void hang_at_barrier(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        asm volatile("bar.sync 1;");
    } else {
        __syncthreads();
    }
    if (i < n) {
        x[i] = 1.0f;
    }
}
