#!/usr/bin/env python3
"""PyTorch's device-to-device copy bandwidth, the peer of cuarray's
BenchmarkCopyDtoD256MiB: the same size, timed the same way (CUDA events
around one copy on one stream, after a warm-up), median of many runs.
Prints one JSON line."""
import json
import statistics

import torch

N = 256 << 20
RUNS = 50

src = torch.randint(0, 255, (N,), dtype=torch.uint8, device="cuda")  # never zeros
dst = torch.empty_like(src)
start = torch.cuda.Event(enable_timing=True)
end = torch.cuda.Event(enable_timing=True)
for _ in range(5):
    dst.copy_(src)
torch.cuda.synchronize()
times = []
for _ in range(RUNS):
    start.record()
    dst.copy_(src)
    end.record()
    end.synchronize()
    times.append(start.elapsed_time(end) / 1e3)
assert torch.equal(dst, src)
med = statistics.median(times)
print(json.dumps({"peer": "torch", "op": "d2d", "bytes": N, "runs": RUNS,
                  "median_s": med, "GB_per_s": N / med / 1e9,
                  "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}))
