#!/usr/bin/env python3
"""scikit-image's filtered backprojection (skimage.transform.iradon) beside
cuarray's on the sim device, measured in one run: the peer of
BenchmarkFBP256 in kernels/fbp_bench_test.go.

Both reconstruct one 256x256 slice from a sinogram of 360 angles over
[0, 180) degrees and 256 detector bins, with the ramp (Ram-Lak) filter and
linear interpolation: iradon(sino, theta, output_size=256,
filter_name='ramp', interpolation='linear', circle=True), in float64 as
scikit-image computes; cuarray with the sinogram already in device memory
(float32, as the FBP example runs, and float64), ramp filter on a fresh
copy of the sinogram then backprojection, on all the cores Go may use,
and float32 on one core (iradon uses one).
These machines are noisy, so the two are measured in alternating rounds
(the Go test binary, then iradon, then the other order) and the figure is
the median over rounds of the ratio iradon time / cuarray time: above 1,
cuarray finishes sooner. Prints a table and one JSON line.

  python3 bench/peers/skimage_fbp.py [--rounds R] [--reps N]

Needs scikit-image from Debian (apt-get install python3-skimage; no Python
package registry is used) and Go (GO, else go on PATH, else
/usr/local/go/bin/go). Run from anywhere: it finds the repository from
its own path.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from skimage.data import shepp_logan_phantom
from skimage.transform import iradon, radon, resize

N, ANGLES = 256, 360
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def go_binary():
    for cand in (os.environ.get("GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if cand and os.path.exists(cand):
            return cand
    sys.exit("skimage_fbp: no Go found (set GO)")


def build_test_binary(tmp):
    out = os.path.join(tmp, "kernels.test")
    subprocess.run([go_binary(), "test", "-c", "-o", out, "./kernels"], cwd=ROOT, check=True)
    return out


def time_cuarray(binary, dtype, reps, procs=None):
    """Seconds per reconstruction from BenchmarkFBP256/<dtype>/fbp, reps
    iterations, on procs cores (None: all)."""
    pattern = "^BenchmarkFBP256$/^%s$/^fbp$" % dtype
    cmd = [binary, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", "%dx" % reps]
    env = dict(os.environ)
    if procs:
        cmd += ["-test.cpu", str(procs)]
        env["GOMAXPROCS"] = str(procs)
    res = subprocess.run(cmd, cwd=os.path.join(ROOT, "kernels"), env=env, capture_output=True, text=True, check=True)
    m = re.search(r"BenchmarkFBP256/%s/fbp\S*\s+\d+\s+([\d.]+) ns/op" % dtype, res.stdout)
    if not m:
        sys.exit("skimage_fbp: no figure in the benchmark's output:\n" + res.stdout + res.stderr)
    return float(m.group(1)) * 1e-9


def time_iradon(sino, theta, reps):
    """Median seconds of reps calls of iradon."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        iradon(sino, theta=theta, output_size=N, filter_name="ramp", interpolation="linear", circle=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    ap.add_argument("--reps", type=int, default=5, help="reconstructions per side and round (default 5)")
    args = ap.parse_args()

    image = resize(shepp_logan_phantom(), (N, N))
    theta = np.linspace(0.0, 180.0, ANGLES, endpoint=False)
    sino = radon(image, theta=theta, circle=True)  # (256 bins, 360 angles)
    assert sino.shape == (N, ANGLES), sino.shape
    iradon(sino, theta=theta, output_size=N, filter_name="ramp", interpolation="linear", circle=True)  # warm-up

    with tempfile.TemporaryDirectory() as tmp:
        binary = build_test_binary(tmp)
        # (label, dtype, cores): all cores, and float32 on one core like iradon
        sides = [("float32", "float32", None), ("float64", "float64", None), ("float32, 1 core", "float32", 1)]
        rows = {label: [] for label, _, _ in sides}
        peer = []
        for r in range(args.rounds):
            order = ["go", "py"] if r % 2 == 0 else ["py", "go"]
            got = {}
            for side in order:
                if side == "go":
                    for label, dt, procs in sides:
                        got[label] = time_cuarray(binary, dt, args.reps, procs)
                else:
                    got["py"] = time_iradon(sino, theta, args.reps)
            peer.append(got["py"])
            for label in rows:
                rows[label].append((got[label], got["py"] / got[label]))

    result = {"name": "fbp-256", "size": N, "angles": ANGLES, "detectors": N, "rounds": args.rounds,
              "reps": args.reps, "go_maxprocs": os.environ.get("GOMAXPROCS", str(os.cpu_count())),
              "skimage_s": statistics.median(peer)}
    print("FBP of one %dx%d slice from %d angles x %d bins, %d rounds of %d (median)" % (N, N, ANGLES, N, args.rounds, args.reps))
    print("%-28s %10s %14s" % ("", "ms", "iradon / it"))
    print("%-28s %10.1f %14s" % ("scikit-image iradon (f64)", 1e3 * result["skimage_s"], "1.00"))
    for label, vals in rows.items():
        sec = statistics.median(v[0] for v in vals)
        ratio = statistics.median(v[1] for v in vals)
        key = label.replace(", 1 core", "_1core")
        result["cuarray_%s_s" % key] = sec
        result["ratio_%s" % key] = ratio
        print("%-28s %10.1f %14.2f" % ("cuarray sim (%s)" % label, 1e3 * sec, ratio))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
