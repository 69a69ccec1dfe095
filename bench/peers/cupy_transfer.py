#!/usr/bin/env python3
"""CuPy's host<->device copy bandwidth, the second peer of `cuarray bench`
(torch_transfer.py is the first): the same sizes, timed the same way (wall
clock around one copy and a device synchronize, after a warm-up), median of
several runs. Prints one JSON line per measurement.

  pinned  HtoD: ndarray.set() from cupyx.empty_pinned memory; DtoH: .get(out=) into it
  direct  HtoD: ndarray.set() from a NumPy (pageable) array;   DtoH: .get(out=) into one
  d2d     cupy.copyto between two device arrays
  bidir   HtoD+DtoH: a pinned set() and a pinned get() at once on two streams

Each is timed on the wall clock and between two CUDA events around it.
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


LATENCY_MAX_BYTES = 64 << 10  # copies up to this size also report latency in µs, as cuarray bench does


def median_seconds(fn, size):
    """Wall-clock and event-timed medians (events recorded on the current
    stream around the copy; get_elapsed_time is in milliseconds)."""
    reps = min(max(BUDGET // size, 3), 50)
    fn()
    cupy.cuda.Device().synchronize()
    begin, end = cupy.cuda.Event(), cupy.cuda.Event()
    times, events = [], []
    for _ in range(reps):
        start = time.perf_counter()
        begin.record()
        fn()
        end.record()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
        events.append(cupy.cuda.get_elapsed_time(begin, end) / 1e3)
    return statistics.median(times), statistics.median(events), reps


def emit(path, direction, size, med, event, reps, moved=None):
    moved = moved or size
    rec = {"peer": "cupy", "path": path, "direction": direction, "bytes": size, "repeats": reps,
           "median_s": med, "GB_per_s": moved / med / 1e9, "event_median_s": event, "event_GB_per_s": moved / event / 1e9,
           "cupy": cupy.__version__, "gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    if size <= LATENCY_MAX_BYTES:
        rec["latency_us"] = event * 1e6
    print(json.dumps(rec), flush=True)


def report(path, direction, size, fn):
    med, event, reps = median_seconds(fn, size)
    emit(path, direction, size, med, event, reps)


def bidir(size, up_dst, up_src, down_src, down_dst):
    """A pinned HtoD on one stream and a pinned DtoH on another, started
    together (the second waits for an event on the first); GB/s of both."""
    s1, s2 = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    begin, ends = cupy.cuda.Event(), [cupy.cuda.Event(), cupy.cuda.Event()]

    def pair():
        begin.record(s1)
        s2.wait_event(begin)
        up_dst.set(up_src, stream=s1)
        ends[0].record(s1)
        down_src.get(stream=s2, out=down_dst)
        ends[1].record(s2)
        cupy.cuda.Device().synchronize()

    reps = min(max(BUDGET // size, 3), 50)
    pair()
    times, events = [], []
    for _ in range(reps):
        start = time.perf_counter()
        pair()
        times.append(time.perf_counter() - start)
        events.append(max(cupy.cuda.get_elapsed_time(begin, e) for e in ends) / 1e3)
    emit("bidir", "HtoD+DtoH", size, statistics.median(times), statistics.median(events), reps, moved=2 * size)


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
    up = cupy.empty_like(dev)
    bidir(n, up, pinned, dev, pinned_out)
    cupy.cuda.Device().synchronize()
    assert (pinned_out == src).all() and (pageable_out == src).all() and bool((dev2 == dev).all())
    assert bool((up == dev).all())
    del pinned, pinned_out, pageable_out, dev, dev2, up
    cupy.get_default_memory_pool().free_all_blocks()
