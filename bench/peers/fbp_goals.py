#!/usr/bin/env python3
"""The FBP kernel goals' figures from one GPU call's outputs, as a Markdown
table beside their goals:

  python3 fbp_goals.py DIR

DIR holds what .gpu/bench.sh writes there (missing files are reported as
missing, never guessed):
  logs/bp-kernels.out    kernels.test -test.bench BackprojectKernels: cuarray's
                         plain and tiled backprojection kernels, event-timed,
                         G pixel-angle updates/s (Gupdates/s)
  peer-cupy-bp.json      cupy_fbp.py: the plain CuPy kernel at the same geometry
  fbp-pipelined.json     fbp -mode resident -json (two streams): seconds, and
                         kernel_seconds from events
  fbp-unpipelined.json   the same with -streams 1

Goals: the tiled kernel at >= 1.5x the plain CuPy kernel's rate (float32);
the pipelined resident run within 1.2x of its kernels' time.
"""
import json
import os
import re
import sys

BENCH = re.compile(r"^BenchmarkBackprojectKernels/(float\d+)/(plain|tiled)/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$")


def bench_rates(path):
    """{(dtype, kernel): (geometry, ms, gupdates)} from go test -bench output."""
    out = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = BENCH.match(line.strip())
        if not m:
            continue
        metrics = dict((unit, float(v)) for v, unit in re.findall(r"([\d.e+-]+) (\S+)", m.group(4)))
        if "Gupdates/s" in metrics:
            out[(m.group(1), m.group(2))] = (m.group(3), metrics.get("ms/kernel"), metrics["Gupdates/s"])
    return out


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(x, spec=".2f"):
    return "missing" if x is None else format(x, spec)


def ratio(a, b):
    return None if a is None or not b else a / b


def main(d):
    rates = bench_rates(os.path.join(d, "logs", "bp-kernels.out"))
    cupy = load(os.path.join(d, "peer-cupy-bp.json"))
    pipe = load(os.path.join(d, "fbp-pipelined.json"))
    flat = load(os.path.join(d, "fbp-unpipelined.json"))
    rows = []
    tiled = rates.get(("float32", "tiled"))
    plain = rates.get(("float32", "plain"))
    cupy_rate = cupy and cupy.get("gupdates_per_s")
    geom = tiled[0] if tiled else "missing"
    cg = cupy and "%dx%dx%d" % (cupy["size"], cupy["angles"], cupy["slices"])
    rows.append(("backproject_tiled f32, G updates/s (%s)" % geom, fmt(tiled and tiled[2], ".1f"), ""))
    rows.append(("backproject (plain) f32, G updates/s", fmt(plain and plain[2], ".1f"), ""))
    rows.append(("plain CuPy kernel f32, G updates/s (%s)" % (cg or "missing"), fmt(cupy_rate, ".1f"), ""))
    r = ratio(tiled and tiled[2], cupy_rate)
    rows.append(("**tiled / plain CuPy**", fmt(r), ">= 1.5: " + ("met" if r is not None and r >= 1.5 else "NOT met" if r is not None else "missing")))
    rows.append(("tiled / cuarray's plain kernel", fmt(ratio(tiled and tiled[2], plain and plain[2])), ""))
    t64, p64 = rates.get(("float64", "tiled")), rates.get(("float64", "plain"))
    rows.append(("f64: tiled / plain, G updates/s", "%s / %s" % (fmt(t64 and t64[2], ".1f"), fmt(p64 and p64[2], ".1f")), ""))
    if tiled and cupy and tiled[0] != cg:
        rows.append(("WARNING", "geometries differ: %s vs %s" % (tiled[0], cg), ""))

    def resident(rep):
        if not rep:
            return None
        for run in rep.get("runs", []):
            if run.get("mode") == "resident":
                return run
        return None

    rp, ru = resident(pipe), resident(flat)
    if rp:
        g = pipe["geometry"]
        rows.append(("resident, %d streams: seconds (%dx%dx%d, %d angles, %d chunks)" % (rp["streams"], g["size"], g["size"], g["slices"], g["angles"], rp["chunks"]),
                     fmt(rp["seconds"], ".4f"), ""))
        ks = rp.get("kernel_seconds")
        rows.append(("resident: its kernels' seconds (events)", fmt(ks, ".4f"), ""))
        o = ratio(rp["seconds"], ks)
        rows.append(("**resident / its kernels**", fmt(o), "<= 1.2: " + ("met" if o is not None and o <= 1.2 else "NOT met" if o is not None else "missing")))
    else:
        rows.append(("resident, pipelined", "missing", ""))
    if ru:
        rows.append(("resident, 1 stream: seconds", fmt(ru["seconds"], ".4f"), ""))
        rows.append(("unpipelined / pipelined time", fmt(ratio(ru["seconds"], rp and rp["seconds"])), ""))
        if rp:
            rows.append(("rmse pipelined, unpipelined", "%.4f, %.4f" % (rp["rmse"], ru["rmse"]), "equal"))
    print("## FBP at the GPU's pace\n")
    print("| figure | value | goal |\n|---|---|---|")
    for name, value, goal in rows:
        print("| %s | %s | %s |" % (name, value, goal))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
