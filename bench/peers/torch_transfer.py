#!/usr/bin/env python3
"""PyTorch's host<->device copy bandwidth, the peer of `cuarray bench`'s
pinned, direct and d2d paths: the same sizes, timed the same way (wall
clock around one copy and a synchronize, after a warm-up), median of
several runs. Prints one JSON line per measurement.

  pinned  HtoD: a pinned CPU tensor .to("cuda");  DtoH: .copy_() into a pinned CPU tensor
  direct  HtoD: a pageable CPU tensor .to("cuda"); DtoH: .copy_() into a pageable CPU tensor
  d2d     a device tensor .copy_() from another
"""
import json
import statistics
import sys
import time

import torch

SIZES = [int(s) for s in sys.argv[1:]] or [4 << 10, 1 << 20, 64 << 20, 1 << 30]
BUDGET = 256 << 20


def median_seconds(fn, size):
    reps = min(max(BUDGET // size, 3), 50)
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), reps


def report(path, direction, size, fn):
    med, reps = median_seconds(fn, size)
    print(json.dumps({"peer": "torch", "path": path, "direction": direction, "bytes": size, "repeats": reps,
                      "median_s": med, "GB_per_s": size / med / 1e9,
                      "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}), flush=True)


for n in SIZES:
    src = torch.randint(0, 255, (n,), dtype=torch.uint8)  # never zeros
    pinned = src.pin_memory()
    pinned_out = torch.empty_like(pinned).pin_memory()
    pageable_out = torch.empty_like(src)
    dev = src.to("cuda")
    dev2 = torch.empty_like(dev)
    report("pinned", "HtoD", n, lambda: pinned.to("cuda", non_blocking=True))
    report("pinned", "DtoH", n, lambda: pinned_out.copy_(dev, non_blocking=True))
    report("direct", "HtoD", n, lambda: src.to("cuda"))
    report("direct", "DtoH", n, lambda: pageable_out.copy_(dev))
    report("d2d", "DtoD", n, lambda: dev2.copy_(dev))
    assert torch.equal(pinned_out, src) and torch.equal(pageable_out, src) and torch.equal(dev2.cpu(), src)
    del src, pinned, pinned_out, pageable_out, dev, dev2
    torch.cuda.empty_cache()
