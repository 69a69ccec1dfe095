#!/usr/bin/env python3
"""PyTorch's host<->device copy bandwidth, the peer of `cuarray bench`'s
pinned, direct and d2d paths and of its -bidir row: the same sizes, timed
the same way (wall clock around one copy and a synchronize, after a
warm-up, and the device's time between two CUDA events recorded around
the copy on the current stream), median of several runs. Prints one JSON
line per measurement.

  pinned      HtoD: a pinned CPU tensor .to("cuda");  DtoH: .copy_() into a pinned CPU tensor
  direct      HtoD: a pageable CPU tensor .to("cuda"); DtoH: .copy_() into a pageable CPU tensor
  d2d         a device tensor .copy_() from another
  pin_memory  HtoH: the pinning cost itself, a pageable tensor's .pin_memory()
              ("first_s": the first call, which allocates page-locked memory;
              the median is of later calls, which PyTorch's caching host
              allocator serves from the blocks freed before)
  pin+to      HtoD: a pageable tensor's .pin_memory().to("cuda"): the pinning
              and the copy, what a program holding pageable memory pays for
              the pinned path
  bidir       HtoD+DtoH: a pinned HtoD and a pinned DtoH at once on two
              streams (both copy engines); GB/s counts both copies' bytes

Ratios go into report.py, beside cuarray's figures of the same run.
"""
import json
import statistics
import sys
import time

import torch

SIZES = [int(s) for s in sys.argv[1:]] or [4 << 10, 1 << 20, 64 << 20, 1 << 30]
BUDGET = 256 << 20
LATENCY_MAX_BYTES = 64 << 10  # copies up to this size also report latency in µs, as cuarray bench does


def measure(fn, size):
    """Returns the wall-clock median, the event-timed median (seconds), the
    repeats and the first call's wall-clock time (the warm-up)."""
    reps = min(max(BUDGET // size, 3), 50)
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, events = [], []
    for _ in range(reps):
        start = time.perf_counter()
        begin.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        events.append(begin.elapsed_time(end) / 1e3)  # elapsed_time is in milliseconds
    return statistics.median(times), statistics.median(events), reps, first


def emit(path, direction, size, med, event, reps, moved=None, **extra):
    moved = moved or size
    rec = {"peer": "torch", "path": path, "direction": direction, "bytes": size, "repeats": reps,
           "median_s": med, "GB_per_s": moved / med / 1e9,
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    if event:
        rec["event_median_s"] = event
        rec["event_GB_per_s"] = moved / event / 1e9
        if size <= LATENCY_MAX_BYTES:
            rec["latency_us"] = event * 1e6
    rec.update(extra)
    print(json.dumps(rec), flush=True)


def report(path, direction, size, fn):
    med, event, reps, _ = measure(fn, size)
    emit(path, direction, size, med, event, reps)


def bidir(size, up_dst, up_src, down_dst, down_src):
    """A pinned HtoD on one stream and a pinned DtoH on another, started
    together; timed until both are done."""
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    begin = torch.cuda.Event(enable_timing=True)
    ends = [torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)]

    def pair():
        begin.record(s1)
        s2.wait_event(begin)
        with torch.cuda.stream(s1):
            up_dst.copy_(up_src, non_blocking=True)
            ends[0].record(s1)
        with torch.cuda.stream(s2):
            down_dst.copy_(down_src, non_blocking=True)
            ends[1].record(s2)
        torch.cuda.synchronize()

    reps = min(max(BUDGET // size, 3), 50)
    pair()
    times, events = [], []
    for _ in range(reps):
        start = time.perf_counter()
        pair()
        times.append(time.perf_counter() - start)
        events.append(max(begin.elapsed_time(e) for e in ends) / 1e3)
    emit("bidir", "HtoD+DtoH", size, statistics.median(times), statistics.median(events), reps, moved=2 * size)


for n in SIZES:
    src = torch.randint(1, 256, (n,), dtype=torch.uint8)  # never zeros
    pinned = src.pin_memory()
    pinned_out = torch.empty_like(pinned).pin_memory()
    pageable_out = torch.empty_like(src)
    dev = src.to("cuda")
    dev2 = torch.empty_like(dev)
    up = torch.empty_like(dev)
    report("pinned", "HtoD", n, lambda: pinned.to("cuda", non_blocking=True))
    report("pinned", "DtoH", n, lambda: pinned_out.copy_(dev, non_blocking=True))
    report("direct", "HtoD", n, lambda: src.to("cuda"))
    report("direct", "DtoH", n, lambda: pageable_out.copy_(dev))
    report("d2d", "DtoD", n, lambda: dev2.copy_(dev))
    # The pinning cost: host work only, so no events; the first call allocates.
    med, _, reps, first = measure(lambda: src.pin_memory(), n)
    emit("pin_memory", "HtoH", n, med, None, reps, first_s=first, first_GB_per_s=n / first / 1e9)
    report("pin+to", "HtoD", n, lambda: src.pin_memory().to("cuda", non_blocking=True))
    bidir(n, up, pinned, pinned_out, dev)
    assert torch.equal(pinned_out, src) and torch.equal(pageable_out, src) and torch.equal(dev2.cpu(), src)
    assert torch.equal(up.cpu(), src)
    del src, pinned, pinned_out, pageable_out, dev, dev2, up
    torch.cuda.empty_cache()
