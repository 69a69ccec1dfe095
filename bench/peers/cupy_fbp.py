#!/usr/bin/env python3
"""The plain CuPy backprojection kernel, the peer of cuarray's
backproject_tiled (the tiled backprojection goal): one thread per pixel, a loop over the
angles, linear interpolation from global memory, the geometry of
kernels/fbp.cu (pixel (y, x) at x - (N-1)/2, (N-1)/2 - y; bin j at
j - (D-1)/2; angle a at pi a / A; zero off the detector; scale pi / A). On
random sinograms (S, A, D) float32 already on the device, timed with CUDA
events after a warm-up, median of RUNS. Prints one JSON line: the median
milliseconds and G pixel-angle updates per second (S A N^2 / time), beside
which `kernels.test -test.bench BackprojectKernels` reports cuarray's two
kernels at the same geometry (fbp_goals.py puts them side by side).

  python3 cupy_fbp.py [SIZE ANGLES SLICES [RUNS]]     (default 512 720 256 20)
"""
import json
import math
import statistics
import sys

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void backproject_plain(float *out, const float *sino, const float *trig,
                                             long long slices, int A, int D, int N, float scale)
{
    long long nn = (long long)N * N;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= slices * nn) return;
    long long s = i / nn, pix = i % nn;
    float cx = (float)(pix % N) - (float)(N - 1) * 0.5f;
    float cy = (float)(N - 1) * 0.5f - (float)(pix / N);
    float c = (float)(D - 1) * 0.5f;
    const float *p = sino + s * (long long)A * D;
    float acc = 0.0f;
    for (int a = 0; a < A; a++) {
        float t = cx * trig[2 * a] + cy * trig[2 * a + 1] + c;
        float fl = floorf(t);
        int j = (int)fl;
        float f = t - fl;
        const float *row = p + (long long)a * D;
        float v0 = (j >= 0 && j < D) ? row[j] : 0.0f;
        float v1 = (j + 1 >= 0 && j + 1 < D) ? row[j + 1] : 0.0f;
        acc += v0 + f * (v1 - v0);
    }
    out[i] = acc * scale;
}
"""


def main(argv):
    size, angles, slices = (int(x) for x in (argv[1:4] if len(argv) >= 4 else (512, 720, 256)))
    runs = int(argv[4]) if len(argv) >= 5 else 20
    kernel = cp.RawKernel(SOURCE, "backproject_plain")
    rng = np.random.default_rng()
    sino = cp.asarray(rng.random((slices, angles, size), dtype=np.float32) * 4 - 1)
    th = np.pi * np.arange(angles) / angles
    trig = cp.asarray(np.stack([np.cos(th), np.sin(th)], axis=1).astype(np.float32).ravel())
    out = cp.empty((slices, size, size), dtype=np.float32)
    n = slices * size * size
    block = 256
    grid = (n + block - 1) // block
    args = (out, sino, trig, np.int64(slices), np.int32(angles), np.int32(size), np.int32(size), np.float32(math.pi / angles))
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        kernel((grid,), (block,), args)
    cp.cuda.Stream.null.synchronize()
    times = []
    for _ in range(runs):
        start.record()
        kernel((grid,), (block,), args)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))  # ms
    host = cp.asnumpy(out[slices // 2])
    if not np.isfinite(host).all() or not host.any():
        raise SystemExit("cupy_fbp: the backprojection is not finite or all zeros")
    ms = statistics.median(times)
    print(json.dumps({
        "peer": "cupy plain backprojection kernel (one thread per pixel, global memory)",
        "size": size, "angles": angles, "slices": slices, "runs": runs,
        "ms_median": ms, "ms_min": min(times), "ms_max": max(times),
        "gupdates_per_s": slices * angles * size * size / (ms / 1e3) / 1e9,
        "cupy": cp.__version__,
    }))


if __name__ == "__main__":
    main(sys.argv)
