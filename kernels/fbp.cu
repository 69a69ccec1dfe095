// fbp.cu: the two device steps of filtered backprojection (FBP) for
// parallel-beam tomography, included by kernels.cu. Sinograms are
// C-contiguous (slices, angles, detectors); images (slices, N, N). The Go
// references are in reference_fbp.go.

#define FBP_PI 3.141592653589793

// ramp_taps writes the 2D-1 taps of the Ram-Lak ramp filter in the spatial
// domain (Kak & Slaney, eq. 61, detector spacing 1): h[0] = 1/4,
// h[k] = -1/(pi^2 k^2) for odd k, 0 for even k; tap k is at index k+D-1.
// Computed in double and rounded, so that Go gets the same bits.
#define FBP_KERNELS(T, SUFFIX)                                                        \
/* trig_table writes cos and sin of theta_a = pi a / A, interleaved.    */          \
extern "C" __global__ void trig_table_##SUFFIX(T *trig, int A)                       \
{                                                                                     \
    GRID_STRIDE(a, (long long)A) {                                                    \
        double th = FBP_PI * (double)a / (double)A;                                   \
        trig[2 * a] = (T)cos(th);                                                     \
        trig[2 * a + 1] = (T)sin(th);                                                 \
    }                                                                                 \
}                                                                                     \
                                                                                      \
extern "C" __global__ void ramp_taps_##SUFFIX(T *h, int D)                           \
{                                                                                     \
    GRID_STRIDE(i, 2LL * D - 1) {                                                     \
        long long k = i - (D - 1);                                                    \
        double v = 0.0;                                                               \
        if (k == 0) v = 0.25;                                                         \
        else if (k & 1) v = -1.0 / (FBP_PI * FBP_PI * (double)k * (double)k);         \
        h[i] = (T)v;                                                                  \
    }                                                                                 \
}                                                                                     \
                                                                                      \
/* ramp_filter convolves each of rows rows of D values with the taps:     */         \
/* out[r][d] = sum_j h[d-j+D-1] * in[r][j], zero outside the detector.     */         \
extern "C" __global__ void ramp_filter_##SUFFIX(T *out, const T *in, const T *h,     \
                                                long long rows, int D)                \
{                                                                                     \
    GRID_STRIDE(i, rows * D) {                                                        \
        long long r = i / D;                                                          \
        int d = (int)(i % D);                                                         \
        const T *p = in + r * D;                                                      \
        T acc = 0;                                                                    \
        for (int j = 0; j < D; j++) acc += h[d - j + D - 1] * p[j];                   \
        out[i] = acc;                                                                 \
    }                                                                                 \
}                                                                                     \
                                                                                      \
/* backproject sums, for each pixel of each slice, the filtered sinogram */          \
/* at t = x cos(theta) + y sin(theta), linearly interpolated (zero off   */          \
/* the detector), times scale. Pixel (row y, column x) of an N x N image */          \
/* sits at x - (N-1)/2, (N-1)/2 - y; detector bin j at j - (D-1)/2.     */          \
/* trig holds cos and sin of each angle, interleaved.                    */          \
extern "C" __global__ void backproject_##SUFFIX(T *out, const T *sino, const T *trig, \
                                                long long slices, int A, int D, int N, \
                                                T scale)                              \
{                                                                                     \
    long long nn = (long long)N * N;                                                  \
    GRID_STRIDE(i, slices * nn) {                                                     \
        long long s = i / nn, pix = i % nn;                                           \
        T cx = (T)(pix % N) - (T)(N - 1) * (T)0.5;                                    \
        T cy = (T)(N - 1) * (T)0.5 - (T)(pix / N);                                    \
        T c = (T)(D - 1) * (T)0.5;                                                    \
        const T *p = sino + s * (long long)A * D;                                     \
        T acc = 0;                                                                    \
        for (int a = 0; a < A; a++) {                                                 \
            T t = cx * trig[2 * a] + cy * trig[2 * a + 1] + c;                        \
            T fl = floor(t);                                                          \
            int j = (int)fl;                                                          \
            T f = t - fl;                                                             \
            const T *row = p + (long long)a * D;                                      \
            T v0 = (j >= 0 && j < D) ? row[j] : (T)0;                                 \
            T v1 = (j + 1 >= 0 && j + 1 < D) ? row[j + 1] : (T)0;                     \
            acc += v0 + f * (v1 - v0);                                                \
        }                                                                             \
        out[i] = acc * scale;                                                         \
    }                                                                                 \
}

FBP_KERNELS(float, f32)
FBP_KERNELS(double, f64)

// ---- backproject_tiled: the same sums as backproject, faster ---------------
//
// backproject_tiled_f32/f64 write the same bits as backproject_f32/f64: each
// pixel's sum over the angles, in the same order, of the same rounded
// operations (written below with the _rn intrinsics, which nvcc never fuses
// or reorders, as the fma that nvcc makes of backproject's
// cx * cos + cy * sin and v0 + f * (v1 - v0)). What changes is where the
// operands come from:
//
//  - A block of BP_TX x BP_TY threads computes a tile of BP_TW x BP_TH
//    pixels of one slice: each thread BP_PX pixels along x (BP_TX apart,
//    so that a warp's lanes read neighbouring bins) in each of BP_PY rows
//    (BP_TY apart). A thread computes cy * sin once per row and angle, and
//    reads an angle's cos, sin and bin offset once for its BP_PX * BP_PY
//    pixels.
//  - The angles are taken BP_AB at a time: the block stages in shared
//    memory, for each, the run of bins its tile can read, as pairs
//    (v0, v1 - v0) of bins j and j+1, zero off the detector, as backproject
//    reads and subtracts them. The run is found from the tile's four
//    corners: t = (cx cos + cy sin) + c, rounded as every pixel rounds it,
//    is monotonic in cx and in cy (each rounded operation is), so every
//    pixel's floor(t) lies between the corners' least and greatest. A pixel
//    then reads its pair with one shared-memory load and no bounds test.
//  - floor(t) and its int come from one add of 1.5 * 2^23 (2^52 for double),
//    exact for |t| < 2^22 (2^51): the rounded sum holds round-to-nearest(t)
//    in its low mantissa bits, one less when that is above t. No float to
//    int conversion in the loop. Go (Kernels.Backproject) runs this kernel
//    only where |t| stays under that bound (tiledFits), else backproject.
//    t is never -0 (c >= 0 and -0 + +0 = +0), so floor's sign of zero does
//    not arise.
//
// The grid is one-dimensional; block b takes tiles b, b + gridDim.x, ...,
// slice by slice, so that the blocks running at once share a slice's
// sinogram in L2.

#define BP_TX 32
#define BP_TY 8
#define BP_PX 4
#define BP_PY 2
#define BP_TW (BP_TX * BP_PX)
#define BP_TH (BP_TY * BP_PY)
#define BP_AB 16
// pairs staged per angle: the tile's reach across the detector,
// |cos| (BP_TW-1) + sin (BP_TH-1) <= BP_TW + BP_TH - 2 bins, plus the floor,
// the pair's second bin and rounding, with room to spare
#define BP_W (BP_TW + BP_TH + 8)

__device__ __forceinline__ float bp_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double bp_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float bp_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double bp_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float bp_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double bp_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float bp_fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double bp_fma(double a, double b, double c) { return __fma_rn(a, b, c); }

// bp_floor returns floor(t) as an int and sets fl to it as T, for |t| under
// 2^22 (float) or 2^31 (double, as the int must hold it).
__device__ __forceinline__ int bp_floor(float t, float &fl)
{
    const float M = 12582912.0f; // 1.5 * 2^23
    float m = __fadd_rn(t, M);
    float r = __fsub_rn(m, M);   // t rounded to the nearest integer, exactly
    int j = __float_as_int(m) - 0x4B400000;
    bool above = r > t;
    fl = above ? __fsub_rn(r, 1.0f) : r;
    return above ? j - 1 : j;
}

__device__ __forceinline__ int bp_floor(double t, double &fl)
{
    const double M = 6755399441055744.0; // 1.5 * 2^52
    double m = __dadd_rn(t, M);
    double r = __dsub_rn(m, M);
    int j = __double2loint(m);
    bool above = r > t;
    fl = above ? __dsub_rn(r, 1.0) : r;
    return above ? j - 1 : j;
}

// bp_t is backproject's t for a pixel at (cx, cy).
template <typename T>
__device__ __forceinline__ T bp_t(T cx, T cy, T cs, T sn, T c)
{
    return bp_add(bp_fma(cx, cs, bp_mul(cy, sn)), c);
}

template <typename T>
struct __align__(2 * sizeof(T)) BpPair {
    T v0, dv; // bin j, and bin j+1 minus bin j
};

template <typename T>
__device__ __forceinline__ void backproject_tiled(T *out, const T *__restrict__ sino, const T *__restrict__ trig,
                                                  long long slices, int A, int D, int N, T scale,
                                                  BpPair<T> (*pairs)[BP_W], T (*tab)[2], int *lo, int *cnt)
{
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BP_TX + tx;
    const int tilesX = (N + BP_TW - 1) / BP_TW, tilesY = (N + BP_TH - 1) / BP_TH;
    const long long perSlice = (long long)tilesX * tilesY, total = perSlice * slices;
    const T half = bp_mul((T)(N - 1), (T)0.5), c = bp_mul((T)(D - 1), (T)0.5);
    for (long long b = blockIdx.x; b < total; b += gridDim.x) {
        const long long s = b / perSlice;
        const int tile = (int)(b - s * perSlice);
        const int x0 = (tile % tilesX) * BP_TW, y0 = (tile / tilesX) * BP_TH;
        const T *p = sino + s * (long long)A * D;
        T cx[BP_PX], cy[BP_PY], acc[BP_PY][BP_PX];
#pragma unroll
        for (int k = 0; k < BP_PX; k++) cx[k] = bp_sub((T)(x0 + tx + BP_TX * k), half);
#pragma unroll
        for (int r = 0; r < BP_PY; r++) {
            cy[r] = bp_sub(half, (T)(y0 + ty + BP_TY * r));
#pragma unroll
            for (int k = 0; k < BP_PX; k++) acc[r][k] = 0;
        }
        // the tile's corners, pixels outside the image included
        const T cxa = bp_sub((T)x0, half), cxb = bp_sub((T)(x0 + BP_TW - 1), half);
        const T cya = bp_sub(half, (T)y0), cyb = bp_sub(half, (T)(y0 + BP_TH - 1));
        for (int a0 = 0; a0 < A; a0 += BP_AB) {
            const int na = min(BP_AB, A - a0);
            __syncthreads(); // the previous pass has read its pairs
            if (tid < na) {
                const int a = a0 + tid;
                const T cs = trig[2 * a], sn = trig[2 * a + 1];
                const T t00 = bp_t(cxa, cya, cs, sn, c), t01 = bp_t(cxb, cya, cs, sn, c);
                const T t10 = bp_t(cxa, cyb, cs, sn, c), t11 = bp_t(cxb, cyb, cs, sn, c);
                T fl;
                const int l = bp_floor(min(min(t00, t01), min(t10, t11)), fl);
                const int h = bp_floor(max(max(t00, t01), max(t10, t11)), fl);
                tab[tid][0] = cs;
                tab[tid][1] = sn;
                lo[tid] = l;
                cnt[tid] = min(h - l + 1, BP_W);
            }
            __syncthreads();
            for (int i = tid; i < na * BP_W; i += BP_TX * BP_TY) {
                const int ai = i / BP_W, k = i - ai * BP_W;
                if (k < cnt[ai]) {
                    const int j = lo[ai] + k;
                    const T *row = p + (long long)(a0 + ai) * D;
                    const T v0 = ((unsigned)j < (unsigned)D) ? __ldg(row + j) : (T)0;
                    const T v1 = ((unsigned)(j + 1) < (unsigned)D) ? __ldg(row + j + 1) : (T)0;
                    pairs[ai][k].v0 = v0;
                    pairs[ai][k].dv = bp_sub(v1, v0);
                }
            }
            __syncthreads();
            for (int ai = 0; ai < na; ai++) {
                const T cs = tab[ai][0], sn = tab[ai][1];
                const int l = lo[ai];
                const BpPair<T> *pr = pairs[ai];
#pragma unroll
                for (int r = 0; r < BP_PY; r++) {
                    const T q = bp_mul(cy[r], sn);
#pragma unroll
                    for (int k = 0; k < BP_PX; k++) {
                        const T t = bp_add(bp_fma(cx[k], cs, q), c);
                        T fl;
                        const int j = bp_floor(t, fl);
                        const T f = bp_sub(t, fl);
                        const BpPair<T> v = pr[j - l];
                        acc[r][k] = bp_add(acc[r][k], bp_fma(f, v.dv, v.v0));
                    }
                }
            }
        }
#pragma unroll
        for (int r = 0; r < BP_PY; r++) {
            const int y = y0 + ty + BP_TY * r;
#pragma unroll
            for (int k = 0; k < BP_PX; k++) {
                const int x = x0 + tx + BP_TX * k;
                if (x < N && y < N) out[(s * N + y) * (long long)N + x] = bp_mul(acc[r][k], scale);
            }
        }
    }
}

#define BP_TILED(T, SUFFIX)                                                           \
extern "C" __global__ void __launch_bounds__(BP_TX * BP_TY)                           \
backproject_tiled_##SUFFIX(T *out, const T *__restrict__ sino, const T *__restrict__ trig, \
                           long long slices, int A, int D, int N, T scale)            \
{                                                                                     \
    __shared__ BpPair<T> pairs[BP_AB][BP_W];                                          \
    __shared__ T tab[BP_AB][2];                                                       \
    __shared__ int lo[BP_AB], cnt[BP_AB];                                             \
    backproject_tiled<T>(out, sino, trig, slices, A, D, N, scale, pairs, tab, lo, cnt); \
}

BP_TILED(float, f32)
BP_TILED(double, f64)
