#!/usr/bin/env python3
"""PyTorch's filtered backprojection of the same scan, the peer of
`examples/fbp -mode resident`: the same sinograms (written by
`go run ./examples/fbp -save PREFIX`), the same filter (the spatial Ram-Lak
taps, applied here as a product in the frequency domain with zero padding
to at least 2D-1, which is the same linear convolution) and the same
linear-interpolation backprojection and geometry (pixel (y, x) at
x - (N-1)/2, (N-1)/2 - y; bin j at j - (D-1)/2; angle a at pi a / A;
scale pi / A). Timed end to end as cuarray times it: pageable host
sinograms in, host volume out, after a warm-up on one slice; median of
RUNS. Prints one JSON line, with the RMSE against the phantom.

  python3 torch_fbp.py PREFIX.json [RUNS]
"""
import json
import math
import statistics
import sys
import time

import numpy as np
import torch


def ramp_response(d, length, device):
    """The rfft of the Ram-Lak taps h[k], k in (-(d-1), d-1), laid out
    circularly in `length` samples."""
    h = torch.zeros(length, dtype=torch.float64)
    k = torch.arange(1, d, dtype=torch.float64)
    odd = -1.0 / (math.pi * math.pi * k * k) * (k.remainder(2) == 1)
    h[0] = 0.25
    h[1:d] = odd
    h[length - d + 1:] = odd.flip(0)
    return torch.fft.rfft(h).to(device=device, dtype=torch.complex64)


def fbp(sino_host, n, device):
    """sino_host: (S, A, D) float32 numpy, pageable. Returns (S, N, N) numpy
    and the seconds of each phase."""
    s, a, d = sino_host.shape
    times = {}
    t0 = time.perf_counter()
    sino = torch.from_numpy(sino_host).to(device)
    torch.cuda.synchronize()
    times["h2d_s"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    length = 1 << (2 * d - 1).bit_length()
    spec = torch.fft.rfft(sino, n=length, dim=-1) * ramp_response(d, length, device)
    filt = torch.fft.irfft(spec, n=length, dim=-1)[..., :d]
    # two zero bins each side: a clamped index then reads zeros, as off the detector
    filt = torch.nn.functional.pad(filt, (2, 2)).contiguous()
    del spec
    torch.cuda.synchronize()
    times["filter_s"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    coords = torch.arange(n, device=device, dtype=torch.float32) - (n - 1) * 0.5
    cx = coords.repeat(n)                      # x - (N-1)/2 for each pixel, row major
    cy = (-coords).repeat_interleave(n)        # (N-1)/2 - y
    theta = torch.arange(a, device=device, dtype=torch.float64) * math.pi / a
    cos, sin = torch.cos(theta).float(), torch.sin(theta).float()
    acc = torch.zeros(s, n * n, device=device, dtype=torch.float32)
    c = (d - 1) * 0.5
    for i in range(a):
        t = cx * cos[i] + cy * sin[i] + c
        j = torch.floor(t)
        f = (t - j).expand(s, -1)
        idx = (j.long().clamp(-2, d) + 2).expand(s, -1)
        row = filt[:, i, :]
        v0 = torch.gather(row, 1, idx)
        v1 = torch.gather(row, 1, idx + 1)
        acc += v0 + f * (v1 - v0)
    acc *= math.pi / a
    torch.cuda.synchronize()
    times["backproject_s"] = time.perf_counter() - t2

    t3 = time.perf_counter()
    out = acc.view(s, n, n).cpu().numpy()
    times["d2h_s"] = time.perf_counter() - t3
    times["seconds"] = time.perf_counter() - t0
    return out, times


def main():
    meta = json.load(open(sys.argv[1]))
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    g = meta["geometry"]
    n = g["size"]
    sino = np.fromfile(meta["sinogram_file"], dtype=meta["dtype"]).reshape(meta["sinogram_shape"])
    phantom = np.fromfile(meta["phantom_file"], dtype=meta["dtype"]).reshape(meta["phantom_shape"])
    fbp(np.ascontiguousarray(sino[:1]), n, "cuda")  # warm-up: context, cuFFT plan, kernels
    results = []
    for _ in range(runs):
        vol, times = fbp(sino, n, "cuda")
        results.append(times)
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    diff = vol.astype(np.float64) - phantom
    rmse = math.sqrt((diff * diff).sum() / (phantom.astype(np.float64) ** 2).sum())
    print(json.dumps({"peer": "torch", "op": "fbp", "size": n, "angles": g["angles"], "slices": g["slices"],
                      "runs": runs, **med, "rmse": rmse,
                      "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}), flush=True)


if __name__ == "__main__":
    main()
