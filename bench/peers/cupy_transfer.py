#!/usr/bin/env python3
"""CuPy's host<->device copy bandwidth, the second peer of `cuarray bench`
(torch_transfer.py is the first): the same sizes, timed the same way (wall
clock around one copy and a device synchronize, after a warm-up), median of
several runs. Prints one JSON line per measurement.

  pinned  HtoD: ndarray.set() from cupyx.empty_pinned memory; DtoH: .get(out=) into it
  direct  HtoD: ndarray.set() from a NumPy (pageable) array;   DtoH: .get(out=) into one
  d2d     cupy.copyto between two device arrays
"""
import json
import statistics
import sys
import time

import cupy
import cupyx
import numpy as np

SIZES = [int(s) for s in sys.argv[1:]] or [4 << 10, 1 << 20, 64 << 20, 1 << 30]
BUDGET = 256 << 20


def median_seconds(fn, size):
    reps = min(max(BUDGET // size, 3), 50)
    fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), reps


def report(path, direction, size, fn):
    med, reps = median_seconds(fn, size)
    print(json.dumps({"peer": "cupy", "path": path, "direction": direction, "bytes": size, "repeats": reps,
                      "median_s": med, "GB_per_s": size / med / 1e9, "cupy": cupy.__version__,
                      "gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}), flush=True)


rng = np.random.default_rng()
for n in SIZES:
    src = rng.integers(1, 255, n, dtype=np.uint8)  # never zeros
    pinned = cupyx.empty_pinned((n,), dtype=np.uint8)
    pinned[...] = src
    pinned_out = cupyx.empty_pinned((n,), dtype=np.uint8)
    pageable_out = np.empty_like(src)
    dev = cupy.empty((n,), dtype=cupy.uint8)
    dev2 = cupy.empty_like(dev)
    report("pinned", "HtoD", n, lambda: dev.set(pinned))
    report("pinned", "DtoH", n, lambda: dev.get(out=pinned_out))
    report("direct", "HtoD", n, lambda: dev.set(src))
    report("direct", "DtoH", n, lambda: dev.get(out=pageable_out))
    report("d2d", "DtoD", n, lambda: cupy.copyto(dev2, dev))
    cupy.cuda.Device().synchronize()
    assert (pinned_out == src).all() and (pageable_out == src).all() and bool((dev2 == dev).all())
    del pinned, pinned_out, pageable_out, dev, dev2
    cupy.get_default_memory_pool().free_all_blocks()
