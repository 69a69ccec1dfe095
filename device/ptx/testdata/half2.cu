// half2.cu: a __half2 kernel as CUDA C writes it (cuda_fp16.h), compiled by
// `nvcc -ptx -arch=compute_80 half2.cu -o half2.ptx` (nvcc 11.8) into
// half2.ptx, which TestHalf2Kernel runs on the interpreter.

#include <cuda_fp16.h>

// haxpy2: x holds float pairs, y holds half pairs. Each thread converts its
// pair of x to __half2 (round to nearest even), computes a*x + y with one
// fused multiply-add per half, clamps the result to [lo, hi] with __hmax2 and
// __hmin2, counts the halves above y with __hgt2, and writes the result back
// to y and, widened to float, to out.
extern "C" __global__ void haxpy2(int n, float a, const float2 *x, __half2 *y,
                                  float2 *out, unsigned *gt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half2 a2 = __float2half2_rn(a);
        __half2 xh = __float22half2_rn(x[i]);
        __half2 yh = y[i];
        __half2 r = __hfma2(a2, xh, yh);
        r = __hmax2(r, __float2half2_rn(-100.0f));
        r = __hmin2(r, __float2half2_rn(100.0f));
        __half2 c = __hgt2(r, yh);
        gt[i] = (unsigned)__low2float(c) + 2u * (unsigned)__high2float(c);
        y[i] = r;
        out[i] = __half22float2(__hsub2(__hmul2(r, xh), __habs2(__hneg2(yh))));
    }
}
