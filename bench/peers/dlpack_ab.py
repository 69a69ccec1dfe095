#!/usr/bin/env python3
"""The cost of cuarray's DLPack export at two commits, measured in one run:
Array.__dlpack__ of the library and Python module of a base commit next to
those of the working tree, on the same device, taking turns.

  python3 bench/peers/dlpack_ab.py [--base 072d7b1] [--device sim:0] [--rounds 5] [--seconds 0.05] [--json]

It builds libcuarray twice with `go build -buildmode=c-shared`: the base
commit's (from `git archive`, in a temporary folder) and the working
tree's, and loads each with the Python module of its own tree (the two
modules read different cuarray_desc layouts). Each round runs one process
per side, base first, then the other; each process times, per call:

  __dlpack__          a versioned capsule made and dropped unconsumed (its
                      destructor deletes the tensor)
  __dlpack__ legacy   the same for the legacy "dltensor" capsule
  numpy.from_dlpack   a capsule made, consumed by NumPy and the NumPy
                      array dropped (the consumer calls the deleter)

Each figure is the median over the rounds of each process's median of 7
timed loops (about --seconds each), in microseconds per call; speed-up =
base / working tree (above 1: the working tree is faster). Needs go, git
and NumPy; nothing else.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))

SHAPE = (1024, 1024)
DTYPE = "float32"
CASES = ["__dlpack__", "__dlpack__ legacy", "numpy.from_dlpack"]


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
    return statistics.median(runs)


def child(args):
    """One side: the module in args.module with the library $CUARRAY_LIB."""
    sys.path.insert(0, args.module)
    import numpy as np
    import cuarray
    a = cuarray.empty(SHAPE, DTYPE, args.device)
    fns = {
        "__dlpack__": lambda: a.__dlpack__(max_version=(1, 0)),
        "__dlpack__ legacy": lambda: a.__dlpack__(),
        "numpy.from_dlpack": lambda: np.from_dlpack(a),
    }
    out = {name: per_call_us(fns[name], args.seconds) for name in CASES}
    out["device"] = a.device
    print(json.dumps(out))


def git(*argv):
    return subprocess.run(["git", "-C", ROOT] + list(argv), check=True, capture_output=True, text=True).stdout.strip()


def build(tree, out):
    """go build -buildmode=c-shared of tree's libcuarray into out."""
    subprocess.run(["go", "build", "-buildmode=c-shared", "-o", out, "./libcuarray"], cwd=tree, check=True)
    return out


def run_side(lib, module, args):
    env = dict(os.environ, CUARRAY_LIB=lib)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--module", module,
                        "--device", args.device, "--seconds", str(args.seconds)],
                       env=env, check=True, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="072d7b1", help="the commit to compare with")
    ap.add_argument("--device", default="sim:0")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.05, help="length of one timed loop")
    ap.add_argument("--json", action="store_true", help="one JSON object a line instead of the table")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--module", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    base = git("rev-parse", "--short", args.base)
    head = git("rev-parse", "--short", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    with tempfile.TemporaryDirectory(prefix="cuarray-dlpack-ab-") as tmp:
        tree = os.path.join(tmp, "base")
        os.makedirs(tree)
        archive = os.path.join(tmp, "base.tar")
        subprocess.run(["git", "-C", ROOT, "archive", "-o", archive, base], check=True)
        with tarfile.open(archive) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(tree, filter="data")
            else:
                tf.extractall(tree)
        sides = {
            "base": (build(tree, os.path.join(tmp, "base.so")), os.path.join(tree, "python")),
            "tree": (build(ROOT, os.path.join(tmp, "tree.so")), os.path.join(ROOT, "python")),
        }
        got = {side: {c: [] for c in CASES} for side in sides}
        device = None
        for _ in range(args.rounds):
            for side in ("base", "tree"):
                r = run_side(*sides[side], args)
                device = r["device"]
                for c in CASES:
                    got[side][c].append(r[c])
    label = "%s%s" % (head, "+changes" if dirty else "")
    rows = []
    for c in CASES:
        b, t = statistics.median(got["base"][c]), statistics.median(got["tree"][c])
        rows.append({"call": c, "device": device, "base": base, "base_us": b, "tree": label, "tree_us": t,
                     "speedup": b / t, "rounds": args.rounds, "shape": list(SHAPE), "dtype": DTYPE})
    if args.json:
        for r in rows:
            print(json.dumps(r), flush=True)
        return
    print("DLPack export per call, µs (median of %d rounds), %s %s on %s" % (args.rounds, DTYPE, SHAPE, device))
    print("%-20s %12s %12s %9s" % ("call", base, label, "speed-up"))
    for r in rows:
        print("%-20s %12.2f %12.2f %8.2fx" % (r["call"], r["base_us"], r["tree_us"], r["speedup"]))


if __name__ == "__main__":
    main()
