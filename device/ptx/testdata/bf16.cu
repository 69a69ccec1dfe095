// bf16.cu: a __nv_bfloat16 kernel as CUDA C writes it (cuda_bf16.h), compiled by
// `nvcc -ptx -arch=compute_80 bf16.cu -o bf16.ptx` (nvcc 11.8) into bf16.ptx,
// which TestBF16Kernel runs on the interpreter.

#include <cuda_bf16.h>

// bf16axpy: y[i] = a*x[i] + y[i] in bfloat16 with one fused multiply-add
// (rounded once to bfloat16), where x comes in as float and is rounded to
// bfloat16 first; out[i] is the result widened to float, plus the float sum
// of the widened product a*x[i] and y[i] rounded to bfloat16 toward zero
// and to nearest.
extern "C" __global__ void bf16axpy(int n, float a, const float *x, __nv_bfloat16 *y,
                                    float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __nv_bfloat16 ab = __float2bfloat16(a);
        __nv_bfloat16 xb = __float2bfloat16_rn(x[i]);
        __nv_bfloat16 yb = y[i];
        __nv_bfloat16 r = __hfma(ab, xb, yb);
        r = __hmax(r, __hneg(__habs(yb)));
        y[i] = r;
        float s = __bfloat162float(ab) * __bfloat162float(xb) + __bfloat162float(yb);
        out[2 * i] = __bfloat162float(r);
        out[2 * i + 1] = __bfloat162float(__float2bfloat16_rz(s));
    }
}
