#!/usr/bin/env bash
# gpu-bench.sh is copied into .gpu/bench.sh by `make gpu-bundle` (make
# bench-gpu). On the GPU machine, from the repository root, in one device
# call of about 5 minutes, right after the tests' call (docs/gpu-results.md,
# "Running on a GPU machine"):
#   bash .gpu/bench.sh [SIZE ANGLES SLICES]      (default 512 720 512)
# It runs both sides of every comparison, each peer right after cuarray's
# measurement of the same work, the figures the docs hold goals for first:
# the transfer paths (cuarray bench -bidir: wall-clock and event-timed,
# latency at small sizes, the host's memcpy ceiling, both directions at
# once; managed memory on demand, with prefetch and read-mostly beside the
# pinned copy of the same run: cuarray bench -managed all; then CuPy's and PyTorch's copies of the same sizes, PyTorch's
# pin_memory() cost and pin_memory().to("cuda") too), the resident FBP
# pipelined on two streams and not, each with its kernels' time from events,
# cuarray's two backprojection kernels (kernels.test -test.bench
# BackprojectKernels, event-timed, G pixel-angle updates/s) beside the plain
# CuPy kernel (peers/cupy_fbp.py) at SIZE x SIZE x BP_SLICES from ANGLES
# (CUARRAY_BP_SLICES, default 256), the export costs (export_cost.py:
# cuarray's arrays and CuPy's in one process), the FBP example in both modes
# (then PyTorch's FBP of the same sinograms), the backend's
# micro-benchmarks (driver call, d2d, pool) beside PyTorch's d2d, and the
# allocators side by side (bench.test -test.bench Allocators:
# cuMemAlloc, cuMemAllocAsync from the default pool with and without a
# release threshold, a virtual-memory grow step, cuarray's caching pool over
# each).
#
# Time: everything runs within CUARRAY_BENCH_BUDGET seconds (default 240),
# the unpacking of the bundle included. TAIL (3 % of it, at least 5 s) is
# kept for the report and the packing at the end; each step has a share of
# the rest (STEPS below, from the H100's times of 2026-11-27) and runs under
# `timeout` for at most its share of what is left when it starts:
#   limit = (seconds left - TAIL) x its weight / (its weight + the weights
#   of the steps after it).
# So the time a step does not use passes down to the steps after it, and a
# step that runs to its limit (a hang, a slow peer) takes only its share:
# the others still run. A share under 5 s is taken as 5 s; when under 5 s
# are left beyond TAIL, a step is not run ("no-time").
# A step that cannot run here is left out before the shares are made, and
# says why (a peer whose Python module is not installed, a test binary the
# bundle lacks: PyTorch and CuPy are absent without a GPU).
#
# Output: at most six files under $OUT (or .gpu/out), none in a folder,
# refreshed after every step, so a call cut short still returns what ran:
# bench.tar.gz (every figure's JSON and every log), bench-report.md (every
# pair side by side as ratios, the goals first: peers/report.py),
# fbp-goals.md (peers/fbp_goals.py), bench-summary.txt, bench.svg and
# fbp-middle-slice.png. bench-summary.txt is what it prints last, at most
# 50 lines: the goals' table (each figure that has a goal, its ratio and
# verdict, the host's memcpy ceiling), every step's result and seconds of
# its limit, the end of each failed step's stderr, the date, commit and GPU.
#
# Without a GPU, rehearse it on a bundle built with `make gpu-bundle
# CUDA_TAGS=` (sim:0; CUARRAY_BENCH_DEVICE picks another) or with
# CUDA_TAGS='-tags cuda,cudaemu' (cuda:0 on the emulated CUDA driver): there
# the defaults are small (64 90 16, BP_SLICES 16, copies up to 64 MiB;
# CUARRAY_BENCH_SIZES sets the copy sizes anywhere), as sim runs the kernels
# as their Go references: a rehearsal of the steps, not figures.
set -u
G="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(pwd)"
OUT="${OUT:-$G/out}"
BUDGET="${CUARRAY_BENCH_BUDGET:-240}"
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
if [ "$BUILD" = cuda ]; then
	geometry="512 720 512" bp_slices=256 sizes=4KiB,1MiB,64MiB,1GiB
else
	geometry="64 90 16" bp_slices=16 sizes=4KiB,1MiB,64MiB
fi
read -r SIZE ANGLES SLICES <<< "$geometry"
SIZE="${1:-$SIZE}" ANGLES="${2:-$ANGLES}" SLICES="${3:-$SLICES}"
BP_SLICES="${CUARRAY_BP_SLICES:-$bp_slices}"
SIZES="${CUARRAY_BENCH_SIZES:-$sizes}"
export CUARRAY_BENCH_DEVICE="$DEV"
export CUARRAY_LIB="$G/libcuarray.so"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" # the cuarray module, for export_cost.py
T="$(mktemp -d "${TMPDIR:-/tmp}/cuarray-bench.XXXXXX")"
W="$T/w"       # figures and logs, packed into $OUT/bench.tar.gz after every step
SCAN="$T/scan" # fbp's saved scan for torch_fbp.py: large, never packed
mkdir -p "$OUT" "$W/logs"
: > "$W/bench-results"
# shellcheck source-path=SCRIPTDIR source=gpu-unpack.sh
. "$G/unpack.sh"

# bytes 4KiB,1MiB: the sizes in bytes, space-separated (the peers' arguments).
bytes() {
	local s n out=""
	for s in ${1//,/ }; do
		n=${s%[KMG]iB}
		case $s in
		*KiB) n=$((n << 10)) ;; *MiB) n=$((n << 20)) ;; *GiB) n=$((n << 30)) ;;
		esac
		out="$out $n"
	done
	echo "$out"
}
PEER_SIZES="$(bytes "$SIZES")"

# Each step's weight: its share, in percent, of the time the steps have. The H100's seconds of
# 2026-11-27 (two of its steps were not timed) with room to spare: cuarray-bench 30, CuPy's copies
# 15, PyTorch's 22, fbp -streams 2 and 1 1 each (and their process start), bp-kernels 15, the CuPy
# kernel 5, export-cost 10, bench-pool 11; bench-allocators not yet run on a GPU (some 1.3 s on the
# emulated driver with its eight allocators, whose pairs are slower than a GPU's); cuarray-bench-managed
# not yet run on a GPU (3 of cuarray-bench's 18: two sizes, 2 to 8 repeats, one path beside it).
STEPS="cuarray-bench:15 cuarray-bench-managed:3 bench-registered:2 peer-cupy-transfer:9 peer-torch-transfer:12 fbp-pipelined:4 fbp-unpipelined:3
	bp-kernels:9 peer-cupy-bp:4 export-cost:6 fbp:9 peer-torch-fbp:8 bench-cuda:5 bench-pool:6 bench-allocators:2 peer-torch-d2d:3"
TAIL=$((BUDGET * 3 / 100))
[ "$TAIL" -lt 5 ] && TAIL=5

# pyhas MODULE...: whether python3 finds every module (without importing them).
pyhas() {
	python3 -c 'import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in sys.argv[1:]) else 1)' "$@" 2> /dev/null
}
# whynot NAME: why the step cannot run here; nothing when it can.
whynot() {
	case $1 in
	bp-kernels) [ -x "$G/tests/kernels.test" ] || echo "no kernels.test in the bundle" ;;
	bench-cuda) [ -x "$G/tests/device_cuda.test" ] || echo "no device_cuda.test in the bundle (built without -tags cuda)" ;;
	bench-pool) [ -x "$G/tests/pool.test" ] || echo "no pool.test in the bundle" ;;
	bench-allocators) [ -x "$G/tests/bench.test" ] || echo "no bench.test in the bundle" ;;
	bench-registered) [ -x "$G/tests/transfer.test" ] || echo "no transfer.test in the bundle" ;;
	cuarray-bench* | fbp*) [ -x "$G/cuarray" ] && [ -x "$G/fbp" ] || echo "the bundle's cuarray and fbp are not unpacked" ;;
	peer-cupy-*) pyhas cupy numpy || echo "CuPy is not installed here (python3 finds no cupy)" ;;
	peer-torch-*) pyhas torch numpy || echo "PyTorch is not installed here (python3 finds no torch)" ;;
	export-cost) pyhas numpy || echo "NumPy is not installed here (python3 finds no numpy)" ;;
	esac
}
declare -A WEIGHT WHY OUTF
LEFT_WEIGHT=0 # the weights of the steps still to run
for s in $STEPS; do
	name=${s%%:*}
	WHY[$name]="$(whynot "$name")"
	WEIGHT[$name]=${s#*:}
	[ -z "${WHY[$name]}" ] && LEFT_WEIGHT=$((LEFT_WEIGHT + WEIGHT[$name]))
done

left() { echo $((BUDGET - ($(date +%s) - START))); }

# record NAME STATUS SECONDS LIMIT NOTE: a line of the steps' table, and the progress line.
record() {
	printf '%-20s %-8s %4s of %-4s %s\n' "$1" "$2" "$3" "$4" "$5" >> "$W/bench-results"
	printf '%s:%s ' "$1" "$2"
}

# summary: bench-summary.txt, at most 50 lines: the goals, the steps, the failed steps' stderr
# (cut to what fits), the date, commit and GPU.
summary() {
	local head="$T/head" tail="$T/tail" fails="$T/fails" room f
	{
		python3 "$G/peers/report.py" --goals "$W" 2> /dev/null || echo "(the goals: report.py failed, logs/report.err)"
		echo
		echo "== steps: result, seconds of its limit (every table: bench-report.md; JSON, logs: bench.tar.gz)"
		cat "$W/bench-results"
	} > "$head"
	{
		echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(cat "$G/commit") (build: $BUILD), device $DEV," \
			"geometry $SIZE $ANGLES $SLICES (bp $BP_SLICES), copies $SIZES, $(($(date +%s) - START))s of ${BUDGET}s"
		nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1 | sed 's/^/gpu /'
	} > "$tail"
	: > "$fails"
	awk '$2 ~ /^(exit|timeout)/ { print $1 }' "$W/bench-results" | while read -r name; do
		f=logs/$name.err
		[ -s "$W/$f" ] || f=${OUTF[$name]} # nothing on stderr: the end of its output
		echo "== $name: the end of $f"
		grep -v '^[[:space:]]*$' "$W/$f" 2> /dev/null | tail -n 2 | cut -c 1-200
	done > "$fails"
	room=$((50 - $(wc -l < "$head") - $(wc -l < "$tail")))
	if [ "$(wc -l < "$fails")" -gt "$room" ]; then
		head -n $((room - 1)) "$fails" > "$fails.cut"
		echo "(more in bench.tar.gz, logs/*.err)" >> "$fails.cut"
		mv "$fails.cut" "$fails"
	fi
	cat "$head" "$fails" "$tail" > "$W/bench-summary.txt"
}

# refresh: the report and the summary again, and everything under $OUT (at most six files).
refresh() {
	python3 "$G/peers/report.py" "$W" > "$T/report.md" 2> "$W/logs/report.err" && mv "$T/report.md" "$W/bench-report.md"
	python3 "$G/peers/fbp_goals.py" "$W" > "$T/fbp-goals.md" 2> "$W/logs/fbp-goals.err" && mv "$T/fbp-goals.md" "$W/fbp-goals.md"
	summary
	local f
	for f in bench-summary.txt bench-report.md fbp-goals.md bench.svg fbp-middle-slice.png; do
		[ -e "$W/$f" ] && cp "$W/$f" "$OUT/"
	done
	tar -czf "$T/bench.tar.gz" -C "$W" . && mv "$T/bench.tar.gz" "$OUT/bench.tar.gz"
}

# step NAME OUTFILE COMMAND...: runs the command with its stdout in $W/OUTFILE (- for
# logs/NAME.out) and its stderr in $W/logs/NAME.err, under timeout for its share of what is
# left (see the top; at least 5 s while 5 s are left beyond TAIL), then records it (ok, exit=N, timeout, skip: the test binary skipped, not
# on a GPU; absent: it cannot run here; no-time) and refreshes $OUT.
step() {
	local name=$1 out=$2 w avail t rc start secs status note=""
	shift 2
	[ "$out" = - ] && out=logs/$name.out
	OUTF[$name]=$out
	if [ -n "${WHY[$name]:-}" ]; then
		record "$name" absent - - "${WHY[$name]}"
		refresh
		return
	fi
	w=${WEIGHT[$name]} avail=$(($(left) - TAIL))
	t=$((avail * w / LEFT_WEIGHT))
	LEFT_WEIGHT=$((LEFT_WEIGHT - w))
	[ "$t" -lt 5 ] && t=5 # a floor: a small share of a small budget
	if [ "$avail" -lt 5 ]; then
		record "$name" no-time - - "$(left)s of ${BUDGET}s left, ${TAIL}s kept for the report"
		refresh
		return
	fi
	start=$(date +%s)
	timeout -k 3 "$t" "$@" < /dev/null > "$W/$out" 2> "$W/logs/$name.err"
	rc=$?
	secs=$(($(date +%s) - start))
	case $rc in
	0) status=ok ;;
	124 | 137) status=timeout ;;
	*) status=exit=$rc ;;
	esac
	if [ "$rc" -eq 0 ] && grep -q -- '--- SKIP' "$W/$out" "$W/logs/$name.err" 2> /dev/null; then
		status=skip
		# why: a test's reason follows its --- SKIP line, a benchmark's comes before it
		note="$(cat "$W/$out" "$W/logs/$name.err" | awk '/--- SKIP/ { if (prev ~ /_test\.go:[0-9]+: /) { print prev; exit }
			getline; print; exit } { prev = $0 }' | sed 's/^[[:space:]]*//' | cut -c 1-120)"
	fi
	record "$name" "$status" "${secs}s" "${t}s" "$note"
	refresh
}

step cuarray-bench bench.json "$G/cuarray" bench -device "$DEV" -sizes "$SIZES" -bidir -json -svg "$W/bench.svg"
# managed memory (on demand, prefetch, read-mostly) beside the pinned, staged and mapped copies of
# the same run, and pageable memory read in place where the device can (elsewhere the report says
# why not): two sizes, a few repeats each (the on-demand rows fault on every page of every repeat)
step cuarray-bench-managed managed.json "$G/cuarray" bench -device "$DEV" -sizes 64MiB,256MiB -budget 512MiB \
	-paths pinned,staged,mapped -managed all -pageable -json -q
# shellcheck disable=SC2086 # PEER_SIZES: one argument a size
step peer-cupy-transfer peer-cupy-transfer.json python3 "$G/peers/cupy_transfer.py" $PEER_SIZES
# shellcheck disable=SC2086
step peer-torch-transfer peer-torch-transfer.json python3 "$G/peers/torch_transfer.py" $PEER_SIZES
for streams in 2 1; do
	[ $streams = 2 ] && name=fbp-pipelined || name=fbp-unpipelined
	step $name $name.json "$G/fbp" -device "$DEV" -mode resident -streams $streams -size "$SIZE" -angles "$ANGLES" \
		-slices "$BP_SLICES" -json -q
done
step bp-kernels - env CUARRAY_BP_SIZE="$SIZE" CUARRAY_BP_ANGLES="$ANGLES" CUARRAY_BP_SLICES="$BP_SLICES" \
	bash -c "cd '$ROOT/kernels' && '$G/tests/kernels.test' -test.run '^\$' -test.bench BackprojectKernels -test.benchtime 20x -test.v"
step peer-cupy-bp peer-cupy-bp.json python3 "$G/peers/cupy_fbp.py" "$SIZE" "$ANGLES" "$BP_SLICES"
step export-cost export-cost.json python3 "$G/peers/export_cost.py" --device "$DEV" --json
step fbp fbp.json "$G/fbp" -device "$DEV" -mode both -size "$SIZE" -angles "$ANGLES" -slices "$SLICES" \
	-json -png "$W/fbp-middle-slice.png" -save "$SCAN"
[ -z "${WHY[peer-torch-fbp]}" ] && [ ! -e "$SCAN.json" ] && WHY[peer-torch-fbp]="fbp saved no scan" &&
	LEFT_WEIGHT=$((LEFT_WEIGHT - WEIGHT[peer-torch-fbp]))
step peer-torch-fbp peer-torch-fbp.json python3 "$G/peers/torch_fbp.py" "$SCAN.json"
rm -f "$SCAN".*
# The driver call, d2d and the pool: 3 rounds of 500 ms each (the first GPU run's 5 of 1 s took
# most of a minute); AllocFree's pairs for 300 ms each (20000x would take some 20 s for the
# device's side alone at 65-74 us a pair), then AllocFreeRatio, both sides in alternating rounds
# of about 2 ms.
step bench-cuda logs/bench-cuda.log bash -c "cd '$ROOT/device/cuda' && '$G/tests/device_cuda.test' -test.run '^\$' -test.bench . -test.benchtime=500ms -test.count=3"
step bench-pool logs/bench-pool.log bash -c "cd '$ROOT/pool' && '$G/tests/pool.test' -test.run '^\$' -test.bench 'AllocFree\$|AllocFreeParallel' -test.benchtime=300ms -test.count=5 && '$G/tests/pool.test' -test.run '^\$' -test.bench AllocFreeRatio -test.benchtime=20x -test.count=3"
# The allocators side by side, each in alternating rounds of about 2 ms, 20 rounds a size, pairs
# with and without a synchronize after each (bench/allocators_bench_test.go).
step bench-allocators logs/bench-allocators.log bash -c "cd '$ROOT/bench' && '$G/tests/bench.test' -test.run '^\$' -test.bench 'Allocators' -test.benchtime=20x -test.count=1"
# The registered path for 256 B pieces of one buffer in flight on 3 streams, kept and registered
# afresh, beside the staged path: what registering costs on a GPU.
step bench-registered logs/bench-registered.log bash -c "cd '$ROOT/transfer' && '$G/tests/transfer.test' -test.run '^\$' -test.bench 'RegisteredSubPagePieces' -test.benchtime=100x -test.count=3"
step peer-torch-d2d peer-torch-d2d.json python3 "$G/peers/torch_d2d.py"
echo
rm -rf "$T"
cat "$OUT/bench-summary.txt"
