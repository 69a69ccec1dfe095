// radon.cu: the simulated scan of the FBP example, included by kernels.cu:
// a 3-D phantom of ellipsoids, and the parallel-beam forward projection
// (Radon transform) of a stack of images into sinograms. Geometry as in
// fbp.cu: pixel (row y, column x) of an N x N image sits at
// x - (N-1)/2, (N-1)/2 - y; detector bin j at j - (D-1)/2; angle a of A at
// pi a / A. The Go references are in reference_radon.go.

#define PHANTOM_MAX 16

// Ellipsoid is one term of a phantom, prepared on the host: a point p is
// inside when sum_i ((m[3i..3i+2] . p - c[i]) * inv[i])^2 <= 1; value is
// added to every voxel inside.
struct Ellipsoid {
    double m[9];   // rotation, row major
    double c[3];   // centre, in the rotated frame
    double inv[3]; // 1 / semi-axis
    double value;
};

struct PhantomTable {
    int count;
    int pad;
    Ellipsoid e[PHANTOM_MAX];
};

// phantom writes slices x N x N voxels: voxel (s, y, x) is centred at
// ((x - (N-1)/2) h, ((N-1)/2 - y) h, z0 + s h) in phantom units, and its
// value is the mean over sub^3 points of the voxel, at f0 + i hs from its
// centre on each axis (i < sub), of the sum of the values of the ellipsoids
// a point lies in, times w = 1/sub^3. Every step is rounded to nearest,
// without contraction, so that Go gets the same bits.
#define PHANTOM_KERNEL(T, SUFFIX)                                                     \
extern "C" __global__ void phantom_##SUFFIX(T *out, PhantomTable tab, long long slices, \
                                            int N, double z0, double h, int sub,      \
                                            double f0, double hs, double w)           \
{                                                                                     \
    long long nn = (long long)N * N;                                                  \
    double half = (double)(N - 1) * 0.5;                                              \
    GRID_STRIDE(i, slices * nn) {                                                     \
        long long s = i / nn, pix = i % nn;                                           \
        double c[3];                                                                  \
        c[0] = __dmul_rn(__dadd_rn((double)(pix % N), -half), h);                     \
        c[1] = __dmul_rn(__dadd_rn(half, -(double)(pix / N)), h);                     \
        c[2] = __dadd_rn(z0, __dmul_rn((double)s, h));                                \
        double v = 0.0;                                                               \
        for (int sz = 0; sz < sub; sz++)                                              \
        for (int sy = 0; sy < sub; sy++)                                              \
        for (int sx = 0; sx < sub; sx++) {                                            \
            double p[3];                                                              \
            p[0] = __dadd_rn(__dadd_rn(c[0], f0), __dmul_rn((double)sx, hs));         \
            p[1] = __dadd_rn(__dadd_rn(c[1], f0), __dmul_rn((double)sy, hs));         \
            p[2] = __dadd_rn(__dadd_rn(c[2], f0), __dmul_rn((double)sz, hs));         \
            for (int k = 0; k < tab.count; k++) {                                     \
                const Ellipsoid &e = tab.e[k];                                        \
                double r = 0.0;                                                       \
                for (int a = 0; a < 3; a++) {                                         \
                    double d = __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(e.m[3 * a], p[0]), \
                                                             __dmul_rn(e.m[3 * a + 1], p[1])), \
                                                   __dmul_rn(e.m[3 * a + 2], p[2])),  \
                                         -e.c[a]);                                    \
                    double q = __dmul_rn(d, e.inv[a]);                                \
                    r = __dadd_rn(r, __dmul_rn(q, q));                                \
                }                                                                     \
                if (r <= 1.0) v = __dadd_rn(v, e.value);                              \
            }                                                                         \
        }                                                                             \
        out[i] = (T)__dmul_rn(v, w);                                                  \
    }                                                                                 \
}

// project writes, for each slice, angle a and detector bin j, the line
// integral of the bilinearly interpolated image along the ray
// u (cos, sin) + tau (-sin, cos), u the bin's offset: samples every step
// pixels from the centre out to the circle of radius sqrt(2) ((N-1)/2 + 1)
// around the image (zero beyond the image), their sum times step. trig holds
// cos and sin of each angle, interleaved, as trig_table writes them.
#define PROJECT_KERNEL(T, SUFFIX)                                                     \
extern "C" __global__ void project_##SUFFIX(T *sino, const T *img, const T *trig,    \
                                            long long slices, int A, int D, int N,   \
                                            T step)                                   \
{                                                                                     \
    long long ad = (long long)A * D;                                                  \
    T half = (T)(N - 1) * (T)0.5;                                                     \
    T w = half + (T)1;                                                                \
    T rc2 = (T)2 * w * w;                                                             \
    GRID_STRIDE(i, slices * ad) {                                                     \
        long long s = i / ad;                                                         \
        int a = (int)(i % ad / D), j = (int)(i % D);                                  \
        T c = trig[2 * a], sn = trig[2 * a + 1];                                      \
        T u = (T)j - (T)(D - 1) * (T)0.5;                                             \
        T acc = 0;                                                                    \
        if (u * u < rc2) {                                                            \
            int K = (int)floor(sqrt(rc2 - u * u) / step);                             \
            const T *im = img + s * (long long)N * N;                                 \
            for (int k = -K; k <= K; k++) {                                           \
                T tau = (T)k * step;                                                  \
                T col = u * c - tau * sn + half;                                      \
                T row = half - (u * sn + tau * c);                                    \
                T fx = floor(col), fy = floor(row);                                   \
                int x0 = (int)fx, y0 = (int)fy;                                       \
                if (x0 < -1 || x0 >= N || y0 < -1 || y0 >= N) continue;               \
                T ax = col - fx, ay = row - fy;                                       \
                bool l = x0 >= 0, r = x0 + 1 < N, t = y0 >= 0, b = y0 + 1 < N;      \
                const T *p = im + (long long)y0 * N + x0;                             \
                T v00 = (t && l) ? p[0] : (T)0;                                       \
                T v01 = (t && r) ? p[1] : (T)0;                                       \
                T v10 = (b && l) ? p[N] : (T)0;                                       \
                T v11 = (b && r) ? p[N + 1] : (T)0;                                   \
                T top = v00 + ax * (v01 - v00);                                       \
                T bot = v10 + ax * (v11 - v10);                                       \
                acc += top + ay * (bot - top);                                        \
            }                                                                         \
        }                                                                             \
        sino[i] = acc * step;                                                         \
    }                                                                                 \
}

PHANTOM_KERNEL(float, f32)
PHANTOM_KERNEL(double, f64)
PROJECT_KERNEL(float, f32)
PROJECT_KERNEL(double, f64)
