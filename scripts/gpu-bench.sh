#!/usr/bin/env bash
# gpu-bench.sh is copied into .gpu/bench.sh by `make gpu-bundle` (make
# bench-gpu). On the GPU machine, from the repository root:
#   bash .gpu/bench.sh [SIZE ANGLES SLICES]      (default 512 720 512)
# It runs both sides of every comparison in one call, each peer right
# after cuarray's measurement of the same work: the transfer paths
# (cuarray bench, then PyTorch's and CuPy's copies of the same sizes) and
# the FBP example in both modes (then PyTorch's FBP of the same sinograms),
# and writes the figures and bench-report.md, side by side as ratios,
# under $OUT (or .gpu/out).
set -u
G="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$G/out}"
SIZE="${1:-512}" ANGLES="${2:-720}" SLICES="${3:-512}"
DEV="${CUARRAY_BENCH_DEVICE:-cuda:0}"  # sim:0 rehearses the script on a machine without a GPU
SCAN="${TMPDIR:-/tmp}/cuarray-scan"   # the saved scan is large: not under $OUT, which comes back
mkdir -p "$OUT/logs"
. "$G/unpack.sh"
: > "$OUT/bench-results"
step() { # name command...: run it, log its stderr, record its exit status
	local name=$1; shift
	"$@" 2> "$OUT/logs/$name.err"
	echo "$name $?" >> "$OUT/bench-results"
}
step cuarray-bench "$G/cuarray" bench -device "$DEV" -json -svg "$OUT/bench.svg" > "$OUT/bench.json"
step peer-torch-transfer python3 "$G/peers/torch_transfer.py" > "$OUT/peer-torch-transfer.json"
step peer-cupy-transfer python3 "$G/peers/cupy_transfer.py" > "$OUT/peer-cupy-transfer.json"
step fbp "$G/fbp" -device "$DEV" -mode both -size "$SIZE" -angles "$ANGLES" -slices "$SLICES" \
	-json -png "$OUT/fbp-middle-slice.png" -save "$SCAN" > "$OUT/fbp.json"
step peer-torch-fbp python3 "$G/peers/torch_fbp.py" "$SCAN.json" > "$OUT/peer-torch-fbp.json"
rm -f "$SCAN".sino.f32 "$SCAN".phantom.f32
python3 "$G/peers/report.py" "$OUT" > "$OUT/bench-report.md"
echo "== steps (name exit-code)"; cat "$OUT/bench-results"
cat "$OUT/bench-report.md"
