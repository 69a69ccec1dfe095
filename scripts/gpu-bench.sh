#!/usr/bin/env bash
# gpu-bench.sh is copied into .gpu/bench.sh by `make gpu-bundle` (make
# bench-gpu). On the GPU machine, from the repository root, in one device
# call (600 s):
#   bash .gpu/bench.sh [SIZE ANGLES SLICES]      (default 512 720 512)
# It runs both sides of every comparison, each peer right after cuarray's
# measurement of the same work: the transfer paths (cuarray bench -bidir:
# wall-clock and event-timed, latency at small sizes, both directions at
# once; then PyTorch's and CuPy's copies of the same sizes, PyTorch's
# pin_memory() cost and pin_memory().to("cuda") too), the export costs
# (export_cost.py: cuarray's arrays and CuPy's in one process), the FBP
# example in both modes (then PyTorch's FBP of the same sinograms), and the
# backend's micro-benchmarks (driver call, d2d, pool) beside PyTorch's d2d.
# First, the FBP kernel goals (about a minute): cuarray's two backprojection
# kernels (kernels.test -test.bench BackprojectKernels: backproject_tiled
# and the plain backproject, event-timed, G pixel-angle updates/s) beside
# the plain CuPy kernel (peers/cupy_fbp.py) at SIZE x SIZE x BP_SLICES from
# ANGLES (BP_SLICES: CUARRAY_BP_SLICES, default 256, the issue's), and the
# resident FBP of that size pipelined on two streams and not, each with its
# kernels' time from events; peers/fbp_goals.py puts them beside the
# issue's goals in fbp-goals.md.
# Every step has a time limit cut to what is left of CUARRAY_BENCH_BUDGET
# seconds (default 540).
#
# It writes at most six files under $OUT (or .gpu/out): bench-report.md
# (every pair side by side as ratios), fbp-goals.md (the FBP kernel goals'
# figures and goals), bench-summary.txt (the steps and their exit codes,
# also printed last), bench.tar.gz (every figure and log), bench.svg and
# fbp-middle-slice.png.
#
# Without a GPU, rehearse it on a bundle built with `make gpu-bundle
# CUDA_TAGS=`: the device is then sim:0 (CUARRAY_BENCH_DEVICE picks
# another), or with CUDA_TAGS='-tags cuda,cudaemu': cuda:0 on the emulated
# CUDA driver; the peers fail where PyTorch or CuPy are missing.
set -u
G="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(pwd)"
OUT="${OUT:-$G/out}"
SIZE="${1:-512}" ANGLES="${2:-720}" SLICES="${3:-512}"
BUDGET="${CUARRAY_BENCH_BUDGET:-540}"
START=$(date +%s)
BUILD="$(cat "$G/build" 2> /dev/null || echo cuda)"
case $BUILD in
cuda) DEV="${CUARRAY_BENCH_DEVICE:-cuda:0}" ;;
cudaemu) # the cuda backend on the emulated driver (make gpu-rehearse's bundle): not a GPU's figures
	DEV="${CUARRAY_BENCH_DEVICE:-cuda:0}"
	export CUARRAY_EMULATED_DRIVER="${CUARRAY_EMULATED_DRIVER:-devices=2}"
	;;
*) DEV="${CUARRAY_BENCH_DEVICE:-sim:0}" ;;
esac
export CUARRAY_BENCH_DEVICE="$DEV"
export CUARRAY_LIB="$G/libcuarray.so"
W="$(mktemp -d "${TMPDIR:-/tmp}/cuarray-bench.XXXXXX")" # figures and logs, packed into $OUT/bench.tar.gz
SCAN="$W/scan"                                         # the saved scan is large: removed before packing
mkdir -p "$OUT" "$W/logs"
# shellcheck source-path=SCRIPTDIR source=gpu-unpack.sh
. "$G/unpack.sh"
: > "$W/bench-results"

left() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME LIMIT RESERVE OUTFILE COMMAND...: runs the command with its
# stdout in $W/OUTFILE (- for none) and its stderr in $W/logs/NAME.err,
# for at most LIMIT seconds, cut so that RESERVE seconds stay for what
# comes after; records its exit status (124: timed out; skipped: no time).
step() {
	local name=$1 t=$2 reserve=$3 out=$4 rc start avail
	shift 4
	avail=$(($(left) - reserve))
	[ "$avail" -lt "$t" ] && t=$avail
	if [ "$t" -lt 10 ]; then
		echo "$name skipped (no time left of ${BUDGET}s)" >> "$W/bench-results"
		return
	fi
	[ "$out" = - ] && out=logs/$name.out
	start=$(date +%s)
	timeout -k 10 "$t" "$@" < /dev/null > "$W/$out" 2> "$W/logs/$name.err"
	rc=$?
	echo "$name $rc $(($(date +%s) - start))s" >> "$W/bench-results"
	echo "$name: exit $rc"
}

BP_SLICES="${CUARRAY_BP_SLICES:-256}"
if [ -e "$G/tests/kernels.test" ]; then
	step bp-kernels 90 420 logs/bp-kernels.out env CUARRAY_BP_SIZE="$SIZE" CUARRAY_BP_ANGLES="$ANGLES" CUARRAY_BP_SLICES="$BP_SLICES" \
		bash -c "cd '$ROOT/kernels' && '$G/tests/kernels.test' -test.run '^\$' -test.bench BackprojectKernels -test.benchtime 20x"
fi
step peer-cupy-bp 60 390 peer-cupy-bp.json python3 "$G/peers/cupy_fbp.py" "$SIZE" "$ANGLES" "$BP_SLICES"
for streams in 2 1; do
	[ $streams = 2 ] && name=fbp-pipelined || name=fbp-unpipelined
	step $name 60 360 $name.json "$G/fbp" -device "$DEV" -mode resident -streams $streams -size "$SIZE" -angles "$ANGLES" \
		-slices "$BP_SLICES" -json -q
done
step cuarray-bench 180 300 bench.json "$G/cuarray" bench -device "$DEV" -bidir -json -svg "$W/bench.svg"
step peer-torch-transfer 120 250 peer-torch-transfer.json python3 "$G/peers/torch_transfer.py"
step peer-cupy-transfer 90 220 peer-cupy-transfer.json python3 "$G/peers/cupy_transfer.py"
if [ -e "$G/peers/export_cost.py" ]; then
	step export-cost 90 200 export-cost.json python3 "$G/peers/export_cost.py" --device "$DEV" --json
fi
step fbp 120 120 fbp.json "$G/fbp" -device "$DEV" -mode both -size "$SIZE" -angles "$ANGLES" -slices "$SLICES" \
	-json -png "$W/fbp-middle-slice.png" -save "$SCAN"
step peer-torch-fbp 120 60 peer-torch-fbp.json python3 "$G/peers/torch_fbp.py" "$SCAN.json"
rm -f "$SCAN".sino.f32 "$SCAN".phantom.f32
if [ -e "$G/tests/device_cuda.test" ]; then
	step bench-cuda 60 40 logs/bench-cuda.log bash -c "cd '$ROOT/device/cuda' && '$G/tests/device_cuda.test' -test.run '^\$' -test.bench . -test.benchtime=1s -test.count=5"
fi
# AllocFree's pairs for 300 ms each (20000x would take some 20 s for the device's side alone at
# the first GPU run's 65-74 us a pair), then AllocFreeRatio, both sides in alternating rounds of about 2 ms.
step bench-pool 40 25 logs/bench-pool.log bash -c "cd '$ROOT/pool' && '$G/tests/pool.test' -test.run '^\$' -test.bench 'AllocFree\$|AllocFreeParallel' -test.benchtime=300ms -test.count=5 && '$G/tests/pool.test' -test.run '^\$' -test.bench AllocFreeRatio -test.benchtime=20x -test.count=3"
step peer-torch-d2d 30 15 peer-torch-d2d.json python3 "$G/peers/torch_d2d.py"
python3 "$G/peers/report.py" "$W" > "$W/bench-report.md" 2> "$W/logs/report.err"
python3 "$G/peers/fbp_goals.py" "$W" > "$W/fbp-goals.md" 2> "$W/logs/fbp-goals.err"

{
	echo "== micro-benchmarks"
	grep -hE '^Benchmark' "$W/logs/bench-cuda.log" "$W/logs/bench-pool.log" 2> /dev/null
	awk '$2 ~ /^[0-9]+$/ && $2 != 0' "$W/bench-results" | while read -r name _; do
		echo "== $name failed: the end of logs/$name.err"
		tail -n 5 "$W/logs/$name.err" 2> /dev/null
	done
	echo "== steps (name exit-code seconds; logs and figures in bench.tar.gz)"
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(cat "$G/commit") (build: $BUILD), device $DEV, $(($(date +%s) - START))s of ${BUDGET}s"
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | sed 's/^/gpu /'
	cat "$W/bench-results"
} > "$W/bench-summary.txt"
cp "$W/bench-report.md" "$W/fbp-goals.md" "$W/bench-summary.txt" "$OUT/"
for f in bench.svg fbp-middle-slice.png; do
	[ -e "$W/$f" ] && cp "$W/$f" "$OUT/"
done
tar -czf "$OUT/bench.tar.gz" -C "$W" .
rm -rf "$W"
cat "$OUT/bench-report.md"
cat "$OUT/fbp-goals.md"
cat "$OUT/bench-summary.txt"
