#!/usr/bin/env python3
"""The cost of handing a cuarray array to another library, per call, next to
the same call on a peer's array in the same process (the export-cost goal:
each within 1.2x of CuPy's on a GPU).

  python3 bench/peers/export_cost.py [--device SPEC] [--json] [--seconds S]

The device is $CUARRAY_BENCH_DEVICE or --device (default "": cuda:0 when the
library was built with -tags cuda and a GPU answers, else sim:0). The
library is $CUARRAY_LIB, else .gpu/libcuarray.so or build/libcuarray.so of
this repository. Rows whose peer is missing (no CuPy, no PyTorch, no GPU)
are left out, saying why.

On a GPU (cuda:N) it times, per call, on a cuarray array and on a CuPy
array of the same shape and dtype:
  __cuda_array_interface__, __dlpack__ (capsule made and dropped),
  torch.as_tensor(x, device="cuda"), torch.from_dlpack(x),
  cupy.asarray(x), cupy.from_dlpack(x).
and cupy.asarray of a fixed-interface control: CuPy returns its own array
from cupy.asarray as it is, so that row's peer figure says nothing of the
import; the control row's peer is a plain object whose
__cuda_array_interface__ is a dict made once (CuPy's array's, with stream
None, as cuarray's says with nothing pending), so it times what CuPy does
to import a foreign array whose interface costs nothing to make.
On sim (host memory), against a NumPy array:
  __array_interface__, __dlpack__, numpy.asarray(x), numpy.from_dlpack(x)
(NumPy's own calls are only a rough peer: its interface is built in C).

Each figure is the median of 7 runs of a timed loop (about --seconds each),
in microseconds per call; ratio = cuarray / peer (above 1: cuarray slower).
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))  # bench/peers or .gpu/peers
if not os.environ.get("CUARRAY_LIB"):
    for lib in (os.path.join(HERE, os.pardir, "libcuarray.so"), os.path.join(ROOT, ".gpu", "libcuarray.so"),
                os.path.join(ROOT, "build", "libcuarray.so")):
        if os.path.exists(lib):
            os.environ["CUARRAY_LIB"] = os.path.abspath(lib)
            break
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import cuarray  # noqa: E402

try:
    import cupy
except ImportError:
    cupy = None
try:
    import torch
except ImportError:
    torch = None

SHAPE = (1024, 1024)
DTYPE = "float32"


def per_call_us(fn, seconds):
    """Median over 7 runs of a loop of fn, in microseconds per call."""
    fn()
    n, t = 1, 0.0
    while True:  # calibrate: a loop that takes about `seconds`
        start = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - start
        if t >= seconds / 4 or n >= 1 << 24:
            break
        n *= 2
    n = max(1, int(n * seconds / max(t, 1e-9)))
    runs = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(runs), n


def dlpack_capsule(x):
    """x.__dlpack__ as a DLPack 1.x consumer calls it (older producers take no max_version)."""
    try:
        return x.__dlpack__(max_version=(1, 0))
    except TypeError:
        return x.__dlpack__()


class FixedCAI:
    """A foreign array whose __cuda_array_interface__ is a fixed dict: the
    control for cupy.asarray (it costs an attribute lookup to read). It
    keeps the array it describes alive."""

    def __init__(self, x):
        self.base = x
        cai = dict(x.__cuda_array_interface__)
        cai["stream"] = None  # nothing to wait for, as cuarray's interface says when nothing is pending
        self.__cuda_array_interface__ = cai


def rows_gpu(spec):
    """cuarray's array, the peer array (CuPy's, else PyTorch's), its name,
    why a peer is missing, and the calls to time on both."""
    a = cuarray.empty(SHAPE, DTYPE, spec)
    rows = [("__cuda_array_interface__", lambda x: x.__cuda_array_interface__),
            ("__dlpack__", dlpack_capsule)]
    peer, peer_name, why = None, None, []
    have_torch = torch is not None and torch.cuda.is_available()
    if cupy is not None:
        peer, peer_name = cupy.empty(SHAPE, DTYPE), "cupy %s" % cupy.__version__
        rows += [("cupy.asarray", cupy.asarray), ("cupy.asarray, fixed CAI", cupy.asarray, FixedCAI(peer)),
                 ("cupy.from_dlpack", cupy.from_dlpack)]
    else:
        why.append("CuPy is not installed")
    if have_torch:
        if peer is None:
            peer, peer_name = torch.empty(SHAPE, dtype=torch.float32, device="cuda"), "torch %s" % torch.__version__
        rows += [("torch.as_tensor", lambda x: torch.as_tensor(x, device="cuda")), ("torch.from_dlpack", torch.from_dlpack)]
    else:
        why.append("PyTorch with CUDA is not available")
    return a, peer, peer_name, "; ".join(why), rows


def rows_host(spec):
    a = cuarray.empty(SHAPE, DTYPE, spec)
    n = np.empty(SHAPE, DTYPE)
    rows = [("__array_interface__", lambda x: x.__array_interface__),
            ("__dlpack__", lambda x: x.__dlpack__()),
            ("numpy.asarray", lambda x: np.asarray(x)),
            ("numpy.from_dlpack", np.from_dlpack)]
    return a, n, "numpy %s" % np.__version__, "", rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default=os.environ.get("CUARRAY_BENCH_DEVICE", ""))
    ap.add_argument("--json", action="store_true", help="one JSON object a line instead of the table")
    ap.add_argument("--seconds", type=float, default=0.05, help="length of one timed loop")
    args = ap.parse_args()
    probe = cuarray.empty((1,), DTYPE, args.device)
    on_gpu = probe.device.startswith("cuda")
    a, peer, peer_name, why, rows = (rows_gpu if on_gpu else rows_host)(args.device)
    results = []
    for name, fn, *control in rows:
        other = control[0] if control else peer
        ours, loops = per_call_us(lambda: fn(a), args.seconds)
        theirs = per_call_us(lambda: fn(other), args.seconds)[0] if other is not None else None
        results.append({"call": name, "device": a.device, "cuarray_us": ours,
                        "peer": peer_name + (" (fixed-interface control)" if control else "") if peer_name else None,
                        "peer_us": theirs,
                        "ratio": ours / theirs if theirs else None, "loops": loops,
                        "shape": list(SHAPE), "dtype": DTYPE})
    if args.json:
        for r in results:
            print(json.dumps(r), flush=True)
        return
    print("export cost per call, µs (median of 7 loops), %s %s on %s; peer: %s" % (DTYPE, SHAPE, a.device, peer_name or "none"))
    if why:
        print("  (%s: its rows are left out)" % why)
    print("%-26s %10s %10s %7s" % ("call", "cuarray", "peer", "ratio"))
    for r in results:
        peer_us = "%10.2f" % r["peer_us"] if r["peer_us"] is not None else "%10s" % "-"
        ratio = "%7.2f" % r["ratio"] if r["ratio"] is not None else "%7s" % "-"
        print("%-26s %10.2f %s %s" % (r["call"], r["cuarray_us"], peer_us, ratio))


if __name__ == "__main__":
    main()
