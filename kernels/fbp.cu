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
