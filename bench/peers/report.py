#!/usr/bin/env python3
"""Puts cuarray's figures and its peers' side by side, as ratios, from the
files scripts/gpu-bench.sh writes into one directory:

  bench.json                  cuarray bench -bidir -json
  managed.json                cuarray bench -paths pinned,staged,mapped -managed all -pageable -json
  peer-torch-transfer.json    torch_transfer.py (one JSON object a line)
  peer-cupy-transfer.json     cupy_transfer.py
  fbp.json                    go run ./examples/fbp -mode both -json
  peer-torch-fbp.json         torch_fbp.py
  fbp-pipelined.json          fbp -mode resident -streams 2 -json
  export-cost.json            export_cost.py --json
  logs/bench-cuda.log, logs/bench-pool.log, logs/bench-allocators.log   go test -bench output

and prints a Markdown report. A missing or empty file is reported as not
run. Ratios are cuarray / peer for bandwidth (above 1: cuarray moves bytes
faster) and peer / cuarray for time (above 1: cuarray finishes sooner).

The report opens with the goals (GOALS below: each figure that has one,
its goal, the ratio it is judged by, and where in docs/ the goal is
written) and the host's memcpy ceiling that the staged path is held to,
measured by the same `cuarray bench` run.

  python3 report.py DIR            the whole report
  python3 report.py --goals DIR    the goals' table alone (bench.sh prints it)
  python3 report.py --goals-json   GOALS as JSON (bench's tests check each
                                   goal's wording in the doc it cites)
"""
import json
import os
import re
import statistics
import sys

# cuarray's paths against the peers' copies of the same kind of host memory
MATCH = {"direct": "direct", "staged": "direct", "pinned": "pinned", "mapped": "pinned", "d2d": "d2d", "bidir": "bidir"}


# Where the goals are written: the docs' sections (their headings, without the #s).
PACE = ("docs/perf.md", "At the GPU's pace: what the H100 of 2026-11-27 left open")
CHECKS = ("docs/gpu-results.md", "Checks waiting for a GPU run")
MIB, GIB = 64 << 20, 1 << 30

# The goals the H100 of 2026-11-27 left open, one entry a goal: the figure
# and what it is divided by (ratio = figure / reference), the bound on that
# ratio, and where the goal is written: each doc's file and section, and the
# words of the goal in one line of that section beside the line's own name
# for the figure (bench's TestPeersReportGoalsAreTheDocs finds them there).
GOALS = [
    {"id": "mapped", "op": ">=", "bound": 0.8,
     "figure": "mapped GB/s ÷ pinned GB/s of the same run, wall-clock medians, HtoD and DtoH at 64 MiB and 1 GiB",
     "docs": [PACE + ("mapped HtoD / DtoH, 64 MiB and 1 GiB", "≥ 0.8 × pinned, both ways")]},
    {"id": "staged", "op": ">=", "bound": 0.9,
     "figure": "staged GB/s ÷ the host's memcpy ceiling measured by the same cuarray bench run (pinned GB/s where "
               "that is lower), HtoD and DtoH at 64 MiB and 1 GiB",
     "docs": [PACE + ("staged at 64 MiB, HtoD / DtoH", "≥ 0.9 × the host's memcpy ceiling"),
              CHECKS + ("staged against the bench's memcpy ceiling, 64 MiB and 1 GiB, both ways", "≥ 0.9 × min(pinned, ceiling)")]},
    {"id": "fbp-resident", "op": "<=", "bound": 1.2,
     "figure": "resident FBP on 2 streams (fbp-pipelined.json): wall-clock seconds ÷ its kernels' event-timed seconds",
     "docs": [PACE + ("FBP resident, wall ÷ its kernels' time", "≤ 1.2")]},
    {"id": "latency", "op": "<=", "bound": 1.1,
     "figure": "4 KiB HtoD, direct and pinned: cuarray's event-timed latency ÷ CuPy's of the same run",
     "docs": [PACE + ("4 KiB event-timed latency, direct / pinned HtoD", "≤ 1.1 × CuPy")]},
    {"id": "export", "op": "<=", "bound": 2.0,
     "figure": "`__dlpack__`, `cupy.from_dlpack`: µs a call on a cuarray array ÷ on a CuPy array (export_cost.py)",
     "docs": [PACE + ("`__dlpack__`, `cupy.from_dlpack`, `torch.from_dlpack`, µs", "≤ 2 × CuPy")]},
    {"id": "export-torch", "op": "<=", "bound": 1.2,
     "figure": "`torch.from_dlpack`: µs a call on a cuarray array ÷ on a CuPy array (export_cost.py)",
     "docs": [CHECKS + ("`torch.from_dlpack` on a cuarray array vs a CuPy array", "within 1.2× of CuPy")]},
]


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    out.append(json.loads(line))
    except (OSError, ValueError):
        pass
    return out


def size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%g %s" % (n / scale, unit)
    return "%d B" % n


def number(v):
    return "%.4g" % v if abs(v) < 1e4 else "{:,.0f}".format(v)


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"


def result(bench, path, direction, n):
    for r in (bench or {}).get("results", []):
        if r["path"] == path and r["direction"] == direction and r["bytes"] == n and not r.get("impossible"):
            return r
    return None


def peer_line(peers, peer, path, direction, n):
    for p in peers:
        if (p.get("peer"), p.get("path"), p.get("direction"), p.get("bytes")) == (peer, path, direction, n):
            return p
    return None


def resident_run(rep):
    for r in (rep or {}).get("runs", []):
        if r.get("mode") == "resident":
            return r
    return None


def goal_rows(d, bench, peers):
    """The goals' rows: (goal, figure name, value, against, ratio or None, why not run)."""
    by = {g["id"]: g for g in GOALS}
    rows = []
    ceiling = (bench or {}).get("memcpy_ceiling", {}).get("GB_per_s")
    for n in (MIB, GIB):
        for direction in ("HtoD", "DtoH"):
            m, p = result(bench, "mapped", direction, n), result(bench, "pinned", direction, n)
            name = "mapped %s %s" % (direction, size(n))
            if m and p:
                rows.append((by["mapped"], name, "%.2f GB/s" % m["GB_per_s"], "pinned %.2f GB/s" % p["GB_per_s"], m["GB_per_s"] / p["GB_per_s"], ""))
            else:
                rows.append((by["mapped"], name, "-", "-", None, "not measured" if bench else "cuarray bench: not run"))
    for n in (MIB, GIB):
        for direction in ("HtoD", "DtoH"):
            st, p = result(bench, "staged", direction, n), result(bench, "pinned", direction, n)
            name = "staged %s %s" % (direction, size(n))
            if st and ceiling:
                ref, against = ceiling, "ceiling %.2f GB/s" % ceiling
                if p and p["GB_per_s"] < ceiling:
                    ref, against = p["GB_per_s"], "pinned %.2f GB/s (ceiling %.2f)" % (p["GB_per_s"], ceiling)
                rows.append((by["staged"], name, "%.2f GB/s" % st["GB_per_s"], against, st["GB_per_s"] / ref, ""))
            else:
                rows.append((by["staged"], name, "-", "-", None,
                             "no memcpy ceiling in bench.json" if st else "not measured" if bench else "cuarray bench: not run"))
    rep = load_json(os.path.join(d, "fbp-pipelined.json"))
    run = resident_run(rep)
    if run and run.get("kernel_seconds"):
        rows.append((by["fbp-resident"], "FBP resident, %d streams" % run.get("streams", 2), "%.4f s" % run["seconds"],
                     "kernels %.4f s" % run["kernel_seconds"], run["seconds"] / run["kernel_seconds"], ""))
    else:
        rows.append((by["fbp-resident"], "FBP resident, 2 streams", "-", "-", None,
                     "no kernel time in fbp-pipelined.json" if run else "fbp -streams 2: not run"))
    cupy = [p for p in peers if p.get("peer") == "cupy"]
    for path in ("direct", "pinned"):
        r, c = result(bench, path, "HtoD", 4 << 10), peer_line(cupy, "cupy", path, "HtoD", 4 << 10)
        name = "4 KiB %s HtoD latency" % path
        if r and r.get("latency_us") and c and c.get("latency_us"):
            rows.append((by["latency"], name, "%.1f µs" % r["latency_us"], "CuPy %.1f µs" % c["latency_us"], r["latency_us"] / c["latency_us"], ""))
        else:
            rows.append((by["latency"], name, "-", "-", None, "CuPy: not run" if r else "cuarray bench: not run"))
    calls = {x.get("call"): x for x in load_lines(os.path.join(d, "export-cost.json"))}
    for call, goal in (("__dlpack__", "export"), ("cupy.from_dlpack", "export"), ("torch.from_dlpack", "export-torch")):
        x = calls.get(call)
        if x and str(x.get("peer", "")).startswith("cupy") and x.get("peer_us"):
            rows.append((by[goal], "`%s`" % call, "%.2f µs" % x["cuarray_us"], "CuPy %.2f µs" % x["peer_us"], x["cuarray_us"] / x["peer_us"], ""))
        else:
            why = "export_cost.py: not run"
            if calls:
                peer = next(iter(calls.values())).get("peer", "?")
                why = "peer %s, not CuPy" % peer if not str(peer).startswith("cupy") else "no %s row" % call
            rows.append((by[goal], "`%s`" % call, "-", "-", None, why))
    return rows


def goals(d, bench, peers):
    """The goals' table, the host's memcpy ceiling above it."""
    lines = ["## Goals (ratio = cuarray's figure ÷ what it is held to, same run)", ""]
    if bench:
        dev, model = bench.get("device", "?"), bench.get("model", "?")
        if not dev.startswith("cuda") or "emulat" in model.lower():
            lines += ["%s (%s) is not a GPU: these verdicts rehearse the report, they judge no GPU." % (dev, model), ""]
        c = bench.get("memcpy_ceiling") or {}
        curve = bench.get("host_memcpy") or []
        if c.get("GB_per_s"):
            lines += ["Host memcpy ceiling, pageable → pinned %s (what staged is held to): **%.2f GB/s** on %d goroutine%s "
                      "(%s GB/s on %s)." % (size(bench.get("host_memcpy_bytes", 0)), c["GB_per_s"], c.get("threads", 0),
                                            "" if c.get("threads") == 1 else "s",
                                            " / ".join("%.2f" % h["GB_per_s"] for h in curve),
                                            " / ".join(str(h["threads"]) for h in curve)), ""]
        else:
            lines += ["Host memcpy ceiling: not in bench.json (the run measured no staged path).", ""]
    refs = []
    for g in GOALS:
        for doc in g["docs"]:
            if doc[:2] not in refs:
                refs.append(doc[:2])
    lines += ["| figure | cuarray | against | ratio | goal | verdict | doc |", "|---|---|---|---|---|---|---|"]
    for g, name, value, against, r, why in goal_rows(d, bench, peers):
        bound = "%s %g" % ("≥" if g["op"] == ">=" else "≤", g["bound"])
        if r is None:
            verdict = "not run: " + why
        else:
            verdict = "met" if (r >= g["bound"] if g["op"] == ">=" else r <= g["bound"]) else "**NOT met**"
        docs = ",".join("[%d]" % (refs.index(doc[:2]) + 1) for doc in g["docs"])
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (name, value, against, "-" if r is None else "%.2f" % r, bound, verdict, docs))
    lines += [""] + ["[%d] %s, \"%s\"" % (i + 1, f, sec) for i, (f, sec) in enumerate(refs)]
    return lines + [""]


def micro(d):
    """The micro-benchmarks' medians (go test -bench lines, -count N)."""
    lines = ["## Micro-benchmarks (median of the -count runs)", ""]
    runs = {}
    for log in ("bench-cuda.log", "bench-pool.log", "bench-allocators.log"):
        try:
            text = open(os.path.join(d, "logs", log)).read()
        except OSError:
            continue
        for line in text.splitlines():
            m = re.match(r"^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$", line.strip())
            if m:
                for v, unit in re.findall(r"([\d.e+-]+) (\S+)", m.group(2)):
                    runs.setdefault(m.group(1), {}).setdefault(unit, []).append(float(v))
    if not runs:
        return lines + ["not run", ""]
    lines += ["| benchmark | runs | medians |", "|---|---|---|"]
    for name, metrics in runs.items():
        n = max(len(v) for v in metrics.values())
        lines.append("| %s | %d | %s |" % (name, n, ", ".join("%s %s" % (number(statistics.median(v)), u) for u, v in metrics.items())))
    return lines + [""]


def transfers(bench, peers, key="GB_per_s", title="## Transfers (GB/s, median)"):
    lines = [title, ""]
    if not bench:
        return lines + ["cuarray bench: not run", ""]
    names = sorted({p["peer"] for p in peers})
    head = "| path | dir | size | cuarray |" + "".join(" %s | cuarray/%s |" % (n, n) for n in names)
    lines += [head, "|" + "---|" * (4 + 2 * len(names))]
    index = {(p["peer"], p["path"], p["direction"], p["bytes"]): p.get(key) for p in peers}
    for r in bench["results"]:
        if r["path"] == "go-copy" or not r.get(key):
            continue
        row = "| %s | %s | %s | %.2f |" % (r["path"], r["direction"], size(r["bytes"]), r[key])
        for n in names:
            peer = index.get((n, MATCH.get(r["path"], r["path"]), r["direction"], r["bytes"]))
            row += " %s | %s |" % ("%.2f" % peer if peer else "-", ratio(r[key], peer))
        lines.append(row)
    if key != "GB_per_s":
        return lines + [""]
    impossible = [r["impossible"] for r in bench["results"] if r.get("impossible")]
    if impossible:
        lines.append("")
        lines += ["- IMPOSSIBLE (cuarray bench refused the run): " + x for x in impossible]
    if not peers:
        lines.append("")
        lines.append("peers: not run")
    return lines + [""]


def managed(bench):
    """The managed-memory rows of a `cuarray bench -managed all` run: each
    size's managed+prefetch HtoD against the pinned copy of the same run,
    and on-demand migration (page faults) against prefetch, both ways."""
    lines = ["## Unified memory (cuarray bench -managed all: GB/s, wall-clock median)", ""]
    if not bench:
        return lines + ["cuarray bench -managed: not run", ""]
    lines += ["| size | dir | pinned | managed-prefetch | prefetch/pinned | managed (on demand) | on-demand/prefetch | faults a repeat | read-mostly |",
              "|---|---|---|---|---|---|---|---|---|"]
    sizes = sorted({r["bytes"] for r in bench["results"] if r["path"].startswith("managed")})
    for n in sizes:
        for d in ("HtoD", "DtoH"):
            pin, pre, dem = (result(bench, p, d, n) for p in ("pinned", "managed-prefetch", "managed"))
            rm = result(bench, "managed-read-mostly", d, n)
            gb = lambda r: r["GB_per_s"] if r else None
            faults = "%d" % (dem["ledger"].get("faults", 0) // dem["repeats"]) if dem and dem.get("ledger") else "-"
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                size(n), d, *("%.2f" % gb(r) if r else "-" for r in (pin, pre)), ratio(gb(pre), gb(pin)),
                "%.2f" % gb(dem) if dem else "-", ratio(gb(dem), gb(pre)), faults, "%.2f" % gb(rm) if rm else "-"))
    impossible = [r["impossible"] for r in bench["results"] if r.get("impossible")]
    lines += [""] + ["- IMPOSSIBLE (cuarray bench refused the run): " + x for x in impossible]
    return lines + [""]


def latency(bench, peers):
    """Small copies' time in µs, event-timed where the side has events:
    peer / cuarray, above 1 when cuarray's copy is done sooner."""
    lines = ["## Latency (µs, event-timed median, copies ≤ 64 KiB)", ""]
    rows = [r for r in (bench or {}).get("results", []) if r.get("latency_us")]
    if not rows:
        return lines + ["no copy ≤ 64 KiB measured", ""]
    names = sorted({p["peer"] for p in peers})
    index = {(p["peer"], p["path"], p["direction"], p["bytes"]): p.get("latency_us") for p in peers}
    lines += ["| path | dir | size | cuarray |" + "".join(" %s | %s/cuarray |" % (n, n) for n in names),
              "|" + "---|" * (4 + 2 * len(names))]
    for r in rows:
        row = "| %s | %s | %s | %.1f |" % (r["path"], r["direction"], size(r["bytes"]), r["latency_us"])
        for n in names:
            peer = index.get((n, MATCH.get(r["path"], r["path"]), r["direction"], r["bytes"]))
            row += " %s | %s |" % ("%.1f" % peer if peer else "-", ratio(peer, r["latency_us"]))
        lines.append(row)
    return lines + [""]


def pageable(bench, peers):
    """What a program holding pageable memory pays to reach the device:
    PyTorch's .to("cuda") of a pageable tensor, the pinning cost itself
    (.pin_memory()), both together (.pin_memory().to("cuda")) and the
    pinned copy alone, beside cuarray's staged and direct paths from
    pageable memory; ratios cuarray staged / each of them."""
    lines = ["## From pageable memory, HtoD (GB/s, wall-clock median): cuarray against PyTorch", ""]
    torch = {(p["path"], p["bytes"]): p for p in peers if p.get("peer") == "torch"}
    ours = {(r["path"], r["bytes"]): r for r in (bench or {}).get("results", []) if r["direction"] in ("HtoD", "HtoH")}
    sizes = sorted({b for (_, b) in torch} | {b for (p, b) in ours if p == "staged"})
    if not sizes:
        return lines + ["not run", ""]

    def gb(d, key):
        return d[key]["GB_per_s"] if key in d else None

    def cell(v):
        return "%.2f" % v if v else "-"

    lines += ["| size | cuarray staged | cuarray direct | torch .to('cuda') pageable | torch .pin_memory() | "
              "torch .pin_memory() first | torch .pin_memory().to('cuda') | torch pinned .to('cuda') | "
              "staged/torch pageable | staged/torch pin+to | staged/torch pinned |",
              "|" + "---|" * 11]
    for n in sizes:
        staged, direct = gb(ours, ("staged", n)), gb(ours, ("direct", n))
        t_page, t_pin, t_pinto, t_pinned = (gb(torch, (p, n)) for p in ("direct", "pin_memory", "pin+to", "pinned"))
        first = torch.get(("pin_memory", n), {}).get("first_GB_per_s")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            size(n), cell(staged), cell(direct), cell(t_page), cell(t_pin), cell(first), cell(t_pinto), cell(t_pinned),
            ratio(staged, t_page), ratio(staged, t_pinto), ratio(staged, t_pinned)))
    return lines + ["", "torch .pin_memory() is the pinning cost alone (a host copy into page-locked memory; "
                        "\"first\" includes allocating it, later calls reuse PyTorch's cached blocks).", ""]


def fbp(rep, peer):
    lines = ["## FBP", ""]
    if not rep:
        return lines + ["cuarray fbp: not run", ""]
    g = rep["geometry"]
    lines.append("%d×%d×%d, %d angles, on %s" % (g["size"], g["size"], g["slices"], g["angles"], rep["device"]))
    lines += ["", "| run | seconds | host→device | device→host | device peak | chunks | rmse |", "|---|---|---|---|---|---|---|"]
    runs = {r["mode"]: r for r in rep.get("runs", [])}
    for mode, r in runs.items():
        led = r["ledger"]
        lines.append("| cuarray %s | %.3f | %s | %s | %s | %d | %.4f |" % (
            mode, r["seconds"], size(led["htod_bytes"]), size(led["dtoh_bytes"]), size(led["device_peak_bytes"]),
            r["chunks"], r["rmse"]))
    if peer:
        lines.append("| torch (%s) | %.3f | | | | | %.4f |" % (peer.get("torch", "?"), peer["seconds"], peer["rmse"]))
    lines.append("")
    res, st = runs.get("resident"), runs.get("staged")
    if res and st:
        speedup = st["seconds"] / res["seconds"]
        lines.append("- staged / resident time: %.2f× (target ≥ 5× at 512³, 720 angles: %s)" % (
            speedup, "met" if speedup >= 5 else "NOT met"))
    if res and peer:
        r = res["seconds"] / peer["seconds"]
        lines.append("- resident / torch time: %.2f× (target ≤ 1.5×: %s); torch phases: h2d %.3f s, filter %.3f s, "
                     "backproject %.3f s, d2h %.3f s" % (r, "met" if r <= 1.5 else "NOT met", peer["h2d_s"],
                                                         peer["filter_s"], peer["backproject_s"], peer["d2h_s"]))
    elif res:
        lines.append("- torch fbp: not run")
    return lines + [""]


def main(argv):
    if argv[1:] == ["--goals-json"]:
        print(json.dumps(GOALS, ensure_ascii=False, indent=1))
        return
    only_goals = len(argv) > 1 and argv[1] == "--goals"
    rest = argv[2:] if only_goals else argv[1:]
    d = rest[0] if rest else "."
    bench = load_json(os.path.join(d, "bench.json"))
    peers = load_lines(os.path.join(d, "peer-torch-transfer.json")) + load_lines(os.path.join(d, "peer-cupy-transfer.json"))
    if only_goals:
        print("\n".join(goals(d, bench, peers)).rstrip("\n"))
        return
    rep = load_json(os.path.join(d, "fbp.json"))
    peer_fbp = load_lines(os.path.join(d, "peer-torch-fbp.json"))
    out = ["# cuarray and its peers", ""]
    if bench:
        out += ["%s (%s), %s" % (bench.get("model", "?"), bench.get("device", "?"), bench.get("date", "?")), ""]
    out += goals(d, bench, peers)
    out += transfers(bench, peers)
    out += transfers(bench, peers, "event_GB_per_s", "## Transfers (GB/s, event-timed median: the device's time between two events around the copy)")
    out += latency(bench, peers)
    out += managed(load_json(os.path.join(d, "managed.json")))
    out += pageable(bench, peers)
    out += fbp(rep, peer_fbp[0] if peer_fbp else None)
    out += micro(d)
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv)
