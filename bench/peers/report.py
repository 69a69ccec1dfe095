#!/usr/bin/env python3
"""Puts cuarray's figures and its peers' side by side, as ratios, from the
files scripts/gpu-bench.sh writes into one directory:

  bench.json                  cuarray bench -bidir -json
  peer-torch-transfer.json    torch_transfer.py (one JSON object a line)
  peer-cupy-transfer.json     cupy_transfer.py
  fbp.json                    go run ./examples/fbp -mode both -json
  peer-torch-fbp.json         torch_fbp.py

and prints a Markdown report. A missing or empty file is reported as not
run. Ratios are cuarray / peer for bandwidth (above 1: cuarray moves bytes
faster) and peer / cuarray for time (above 1: cuarray finishes sooner).

  python3 report.py DIR
"""
import json
import os
import sys

# cuarray's paths against the peers' copies of the same kind of host memory
MATCH = {"direct": "direct", "staged": "direct", "pinned": "pinned", "mapped": "pinned", "d2d": "d2d", "bidir": "bidir"}


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


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"


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


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    bench = load_json(os.path.join(d, "bench.json"))
    peers = load_lines(os.path.join(d, "peer-torch-transfer.json")) + load_lines(os.path.join(d, "peer-cupy-transfer.json"))
    rep = load_json(os.path.join(d, "fbp.json"))
    peer_fbp = load_lines(os.path.join(d, "peer-torch-fbp.json"))
    out = ["# cuarray and its peers", ""]
    if bench:
        out += ["%s (%s), %s" % (bench.get("model", "?"), bench.get("device", "?"), bench.get("date", "?")), ""]
    out += transfers(bench, peers)
    out += transfers(bench, peers, "event_GB_per_s", "## Transfers (GB/s, event-timed median: the device's time between two events around the copy)")
    out += latency(bench, peers)
    out += pageable(bench, peers)
    out += fbp(rep, peer_fbp[0] if peer_fbp else None)
    print("\n".join(out))


if __name__ == "__main__":
    main()
