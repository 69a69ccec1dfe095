// samples.cu: CUDA C kernels in the manner of NVIDIA's cuda-samples
// (matrixMul, reduction, histogram, bitonic sort, vote and atomic
// intrinsics), compiled by `nvcc -ptx -arch=compute_70 samples.cu` into
// samples.ptx, which the interpreter's tests run against Go computations.

#define TILE 16

// matrixMul: C = A * B, A of hA x wA, B of wA x wB, tiles in shared memory.
extern "C" __global__ void matrixMul(float *C, const float *A, const float *B, int wA, int wB)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    float sum = 0;
    for (int t = 0; t < wA / TILE; t++) {
        As[ty][tx] = A[(by * TILE + ty) * wA + t * TILE + tx];
        Bs[ty][tx] = B[(t * TILE + ty) * wB + bx * TILE + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++) sum = __fmaf_rn(As[ty][k], Bs[k][tx], sum);
        __syncthreads();
    }
    C[(by * TILE + ty) * wB + bx * TILE + tx] = sum;
}

// reduceShfl: per-block sums of ints by warp shuffles and shared memory.
extern "C" __global__ void reduceShfl(const int *in, int *out, int n)
{
    __shared__ int warpSums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warpSums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nw = (blockDim.x + 31) >> 5;
        v = lane < nw ? warpSums[lane] : 0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

// histogram256: byte histogram with shared-memory atomics, merged globally.
extern "C" __global__ void histogram256(const unsigned char *data, int n, unsigned int *hist)
{
    __shared__ unsigned int h[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) h[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&h[data[i]], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&hist[i], h[i]);
}

// bitonicSort: sorts 1024 unsigned ints per block in shared memory (512 threads).
extern "C" __global__ void bitonicSort(unsigned int *d)
{
    __shared__ unsigned int s[1024];
    unsigned int *base = d + blockIdx.x * 1024;
    int t = threadIdx.x;
    s[t] = base[t];
    s[t + 512] = base[t + 512];
    for (unsigned int size = 2; size <= 1024; size <<= 1) {
        unsigned int dir = ((t & (size / 2)) != 0);
        for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned int pos = 2 * t - (t & (stride - 1));
            unsigned int a = s[pos], b = s[pos + stride];
            bool swap = (a > b) != (size == 1024 ? 0 : dir);
            if (swap) { s[pos] = b; s[pos + stride] = a; }
        }
    }
    __syncthreads();
    base[t] = s[t];
    base[t + 512] = s[t + 512];
}

// voteOps: per thread, the warp's ballot, all and any of (in[i] > 0), and
// __activemask() inside a branch taken by lanes with even inputs.
extern "C" __global__ void voteOps(const int *in, unsigned int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = in[i] > 0;
    unsigned int b = __ballot_sync(0xffffffffu, p);
    int all = __all_sync(0xffffffffu, p);
    int any = __any_sync(0xffffffffu, p);
    unsigned int m = 0;
    if ((in[i] & 1) == 0) m = __activemask();
    out[4 * i] = b;
    out[4 * i + 1] = all;
    out[4 * i + 2] = any;
    out[4 * i + 3] = m;
}

// atomicOps: global atomics of every kind on a few counters.
extern "C" __global__ void atomicOps(int *c, unsigned int *u, unsigned long long *ull, float *f, double *d)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&c[0], 1);
    atomicSub(&c[1], 1);
    atomicMax(&c[2], i);
    atomicMin(&c[3], -i);
    atomicAnd(&c[4], ~(1 << (i & 31)));
    atomicOr(&c[5], 1 << (i & 31));
    atomicXor(&c[6], i);
    atomicInc(&u[0], 100u);
    atomicDec(&u[1], 1000u);
    atomicCAS(&u[2], (unsigned)i, (unsigned)i + 1);
    atomicExch(&u[3], 7u);
    atomicAdd(&ull[0], (unsigned long long)i);
    atomicAdd(&f[0], 0.5f);
    atomicAdd(&d[0], 0.25);
}
