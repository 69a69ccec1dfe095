// kernels.cu: cuarray's first GPU kernels. `make ptx` compiles this file
// with nvcc into kernels.fatbin (sm_90 machine code and compute_70 PTX),
// which the Go package embeds, and kernels.ptx, its readable PTX. Every
// kernel has a Go reference in reference.go that the sim backend runs and
// that GPU tests compare against.
//
// Arrays are passed as a base pointer (element 0, as DevArray.Ptr) and a
// Layout: shape and byte strides of up to MAX_DIMS axes. Elements are
// visited in C order; negative strides are allowed. All loops are
// grid-stride loops, so any grid size covers any array.

#define MAX_DIMS 8

struct Layout {
    long long n;                 // number of elements
    int ndim;
    int pad;
    long long shape[MAX_DIMS];
    long long strides[MAX_DIMS]; // bytes
};

// offset_of returns the byte offset of the i-th element in C order.
__device__ __forceinline__ long long offset_of(const Layout &L, long long i)
{
    long long off = 0;
    for (int k = L.ndim - 1; k >= 0; k--) {
        long long s = L.shape[k];
        off += (i % s) * L.strides[k];
        i /= s;
    }
    return off;
}

#define GRID_STRIDE(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

#define ELEMENTWISE(T, SUFFIX)                                                        \
extern "C" __global__ void fill_##SUFFIX(char *a, Layout L, T v)                     \
{                                                                                     \
    GRID_STRIDE(i, L.n) *(T *)(a + offset_of(L, i)) = v;                              \
}                                                                                     \
extern "C" __global__ void scale_##SUFFIX(char *a, Layout L, T alpha)                \
{                                                                                     \
    GRID_STRIDE(i, L.n) { T *p = (T *)(a + offset_of(L, i)); *p = alpha * *p; }       \
}                                                                                     \
extern "C" __global__ void axpy_##SUFFIX(char *y, Layout Ly, const char *x, Layout Lx, T alpha) \
{                                                                                     \
    GRID_STRIDE(i, Ly.n) {                                                            \
        T *p = (T *)(y + offset_of(Ly, i));                                           \
        *p = alpha * *(const T *)(x + offset_of(Lx, i)) + *p;                         \
    }                                                                                 \
}                                                                                     \
extern "C" __global__ void sum_##SUFFIX(const char *a, Layout L, double *out)         \
{                                                                                     \
    double acc = 0;                                                                   \
    GRID_STRIDE(i, L.n) acc += (double)*(const T *)(a + offset_of(L, i));             \
    for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);     \
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);                                 \
}

ELEMENTWISE(float, f32)
ELEMENTWISE(double, f64)

struct Item16 { unsigned long long lo, hi; };

// pack gathers a strided array into contiguous dst; unpack scatters
// contiguous src into a strided array. One body per item size.
#define PACK(T, SIZE)                                                                 \
extern "C" __global__ void pack_##SIZE(char *dst, const char *src, Layout L)          \
{                                                                                     \
    GRID_STRIDE(i, L.n) ((T *)dst)[i] = *(const T *)(src + offset_of(L, i));          \
}                                                                                     \
extern "C" __global__ void unpack_##SIZE(char *dst, Layout L, const char *src)        \
{                                                                                     \
    GRID_STRIDE(i, L.n) *(T *)(dst + offset_of(L, i)) = ((const T *)src)[i];          \
}

PACK(unsigned char, 1)
PACK(unsigned short, 2)
PACK(unsigned int, 4)
PACK(unsigned long long, 8)
PACK(Item16, 16)

// copy_wide copies n contiguous bytes from src to dst, where src and dst
// have the same address mod 16 (the host checks, copyWideFits): a head of
// bytes up to the first 16-byte boundary, then 16-byte words (one 128-bit
// load and store each), WIDE_LOADS of them in flight per thread at once,
// then a tail of bytes. It is the mapped path's copy of a contiguous range:
// reads of mapped host memory cross the host link, where a request's size
// and the requests in flight bound the rate (the generic pack kernel moves
// one item a thread, one byte for uint8). Words are indexed in 1-D: no
// division per element.
#define WIDE_LOADS 4

extern "C" __global__ void copy_wide(char *dst, const char *src, long long n)
{
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long threads = (long long)blockDim.x * gridDim.x;
    long long head = (16 - ((unsigned long long)dst & 15)) & 15;
    if (head > n) head = n;
    long long words = (n - head) / 16;
    long long tail = head + 16 * words;
    for (long long i = tid; i < head; i += threads) dst[i] = src[i];
    for (long long i = tail + tid; i < n; i += threads) dst[i] = src[i];
    const uint4 *s = (const uint4 *)(src + head);
    uint4 *d = (uint4 *)(dst + head);
    for (long long i = tid; i < words; i += WIDE_LOADS * threads) {
        uint4 v[WIDE_LOADS];
#pragma unroll
        for (int u = 0; u < WIDE_LOADS; u++) {
            long long j = i + u * threads;
            if (j < words) v[u] = s[j];
        }
#pragma unroll
        for (int u = 0; u < WIDE_LOADS; u++) {
            long long j = i + u * threads;
            if (j < words) d[j] = v[u];
        }
    }
}

// checksum adds, modulo 2^64, (2i+1) * w_i over the little-endian 32-bit
// words w_i of nbytes contiguous bytes (the last word zero-padded). The sum
// is exact and the same in any order, so GPU and Go must agree bit for bit.
extern "C" __global__ void checksum(const unsigned char *p, long long nbytes, unsigned long long *out)
{
    unsigned long long acc = 0;
    long long words = (nbytes + 3) / 4;
    GRID_STRIDE(i, words) {
        unsigned int w = 0;
        for (int b = 0; b < 4; b++) {
            long long at = 4 * i + b;
            if (at < nbytes) w |= (unsigned int)p[at] << (8 * b);
        }
        acc += (unsigned long long)w * (unsigned long long)(2 * i + 1);
    }
    for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

#include "fbp.cu"
#include "radon.cu"
