#!/usr/bin/env python3
"""Puts cuarray's figures and its peers' side by side, as ratios, from the
files scripts/gpu-bench.sh writes into one directory:

  bench.json                  cuarray bench -json
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
MATCH = {"direct": "direct", "staged": "direct", "pinned": "pinned", "mapped": "pinned", "d2d": "d2d"}


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


def transfers(bench, peers):
    lines = ["## Transfers (GB/s, median)", ""]
    if not bench:
        return lines + ["cuarray bench: not run", ""]
    names = sorted({p["peer"] for p in peers})
    head = "| path | dir | size | cuarray |" + "".join(" %s | cuarray/%s |" % (n, n) for n in names)
    lines += [head, "|" + "---|" * (4 + 2 * len(names))]
    index = {(p["peer"], p["path"], p["direction"], p["bytes"]): p["GB_per_s"] for p in peers}
    for r in bench["results"]:
        if r["path"] == "go-copy":
            continue
        row = "| %s | %s | %s | %.2f |" % (r["path"], r["direction"], size(r["bytes"]), r["GB_per_s"])
        for n in names:
            peer = index.get((n, MATCH.get(r["path"], r["path"]), r["direction"], r["bytes"]))
            row += " %s | %s |" % ("%.2f" % peer if peer else "-", ratio(r["GB_per_s"], peer))
        lines.append(row)
    impossible = [r["impossible"] for r in bench["results"] if r.get("impossible")]
    if impossible:
        lines.append("")
        lines += ["- IMPOSSIBLE (cuarray bench refused the run): " + x for x in impossible]
    if not peers:
        lines.append("")
        lines.append("peers: not run")
    return lines + [""]


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
    out += fbp(rep, peer_fbp[0] if peer_fbp else None)
    print("\n".join(out))


if __name__ == "__main__":
    main()
