#!/usr/bin/python3
"""Times NumPy's np.ascontiguousarray on strided views: the peer of
devarray's host gather (BenchmarkHostGather in devarray/gather_bench_test.go,
which runs this script and prints numpy_time / go_time per layout).

Usage: numpy_gather.py LAYOUTS_JSON [REPEATS]

LAYOUTS_JSON is a list of {"name", "dtype", "parent": [..],
"slices": [[start, stop, step], ..], "flip": [axes], "perm": [..]}: the
view is np.flip(parent[start:stop:step, ...], flip).transpose(perm) of a
C-contiguous parent of random values. Prints one JSON object: name -> {"ascontiguousarray":
median seconds of np.ascontiguousarray(view) (null where it returns the
view itself, a C-contiguous one, without copying), "copyto": seconds of
np.copyto(dst, view) into a C-contiguous dst made once}, each the best of
REPEATS runs (default 7; the best, as other work on the machine only ever
adds time) after a warm-up run, on one thread, as NumPy copies. The
first allocates its result each time, as devarray.ToHost does; the
second is the same work as devarray.HostStrided.Gather into a buffer it
is given, and the Go benchmark compares against the faster of the two.
"""
import json
import sys
import time

import numpy as np


def view_of(spec, rng):
    parent = rng.random(spec["parent"], dtype=np.float64).astype(spec["dtype"])
    idx = tuple(slice(a, b, c) for a, b, c in spec["slices"])
    v = parent[idx]
    for axis in spec.get("flip") or []:
        v = np.flip(v, axis)
    return v.transpose(spec["perm"])


def main():
    layouts = json.loads(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    rng = np.random.default_rng()
    out = {}
    for spec in layouts:
        v = view_of(spec, rng)
        np.ascontiguousarray(v)  # warm-up
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            c = np.ascontiguousarray(v)
            times.append(time.perf_counter() - t)
            copied = not np.shares_memory(c, v)
            del c
        dst = np.empty(v.shape, dtype=v.dtype)
        np.copyto(dst, v)  # warm-up: dst paged in
        into = []
        for _ in range(repeats):
            t = time.perf_counter()
            np.copyto(dst, v)
            into.append(time.perf_counter() - t)
        # ascontiguousarray of a C-contiguous view returns the view itself: no copy to time.
        out[spec["name"]] = {"ascontiguousarray": min(times) if copied else None,
                             "copyto": min(into)}
        del v, dst
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
