#!/usr/bin/env bash
# gpu-run.sh is copied into .gpu/run.sh by `make gpu-bundle`. On the GPU
# machine, from the repository root, in one device call (600 s):
#   bash .gpu/run.sh
# It runs `cuarray info`, every bundled package's tests on the test device
# (cuda:0), compute-sanitizer (memcheck over the kernels, transfer and
# pinned tests, racecheck over kernels) and the Python module's tests
# (NumPy on sim; CuPy and PyTorch on the GPU). Every step has a time limit
# cut to what is left of CUARRAY_RUN_BUDGET seconds (default 540), so the
# logs are packed before the call's 600 s end; a step with no time left is
# skipped and counted as failed.
#
# It writes two files under $OUT (or .gpu/out): logs.tar.gz (every log)
# and summary.txt, which is also what it prints last: the failures inline,
# a short table, and, as the last line,
#   run: DATE GPU COMMIT tests=PASSED/TOTAL failed=N
# (PASSED/TOTAL: top-level tests and Python tests that passed, of all that
# ran; N: failed tests, plus steps that crashed, timed out or were skipped,
# plus sanitizer runs that found a memory error or a race).
#
# Without a GPU, rehearse it on a bundle built with `make gpu-bundle
# CUDA_TAGS=`: the test device is then sim:0 (CUARRAY_TEST_DEVICE picks
# another), the GPU Python suite is left out, and the sanitizer runs only
# when CUARRAY_SANITIZER names one (a stand-in that replays a log will do).
set -u
G="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(pwd)"
OUT="${OUT:-$G/out}"
BUDGET="${CUARRAY_RUN_BUDGET:-540}"
START=$(date +%s)
L="$(mktemp -d "${TMPDIR:-/tmp}/cuarray-run.XXXXXX")" # the logs, packed into $OUT/logs.tar.gz
mkdir -p "$OUT"
# shellcheck source-path=SCRIPTDIR source=gpu-unpack.sh
. "$G/unpack.sh"

BUILD="$(cat "$G/build" 2>/dev/null || echo cuda)"
if [ "$BUILD" = cuda ]; then
	DEV="${CUARRAY_TEST_DEVICE:-cuda:0}"
else
	DEV="${CUARRAY_TEST_DEVICE:-sim:0?mem=256MiB}"
fi
export CUARRAY_TEST_DEVICE="$DEV"
# The bundle's cuda libcuarray, unpacked from bins.tar.xz: python.test, libcuarray.test's C and C++
# callers and the Python suites load it, as there is no go command there to build one
# (internal/toolchain.Library).
export CUARRAY_LIB="$G/libcuarray.so"
# The conformance tests' observations (device/cuda/conformance, observe_test.go): what the driver
# answered where no GPU had, as JSON in the logs, to check the emulated driver's table against.
export CUARRAY_CONFORMANCE_JSON="$L/conformance-observations.json"
COMMIT="$(cat "$G/commit")"
GPU="none"
if command -v nvidia-smi > /dev/null; then
	GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -n 1 | tr -s ' ' '_')"
	[ -n "$GPU" ] || GPU="unknown"
fi
SANITIZER="${CUARRAY_SANITIZER:-$(command -v compute-sanitizer)}" # CUARRAY_SANITIZER: another one, or a stand-in to rehearse
for s in /usr/local/cuda*/bin/compute-sanitizer /usr/local/cuda*/compute-sanitizer/compute-sanitizer; do
	[ -z "$SANITIZER" ] && [ -x "$s" ] && SANITIZER=$s
done

# left: seconds left of the budget. fit T RESERVE: T, cut so that RESERVE
# seconds stay for what comes after; 0 when less than 10 would be left.
left() { echo $((BUDGET - ($(date +%s) - START))); }
fit() {
	local t=$1 avail=$(($(left) - $2))
	[ "$avail" -lt "$t" ] && t=$avail
	[ "$t" -lt 10 ] && t=0
	echo "$t"
}

# The table's rows: name status pass fail skip seconds (status: ok, FAIL,
# exit N, timeout, skipped). FAILED counts failures, TESTS_PASS and
# TESTS_ALL the tests.
: > "$L/results"
TESTS_PASS=0 TESTS_ALL=0 FAILED=0
row() { printf '%-20s %-9s %5s %5s %5s %5ss\n' "$@" >> "$L/results"; }

# failures LOG RC: each failing test's own output (go test -v), at most 40
# lines a test; for a timeout, the tests that were running; for a binary
# that failed otherwise without a failing test (a crash), the log's first
# panic or last 25 lines.
failures() {
	local log=$1 rc=$2
	if grep -q 'panic: test timed out' "$log"; then
		sed -n '/panic: test timed out/,/^$/p' "$log" | head -n 20
	elif grep -q -- '^ *--- FAIL' "$log"; then
		awk '
			/^=== (RUN|CONT|PAUSE|NAME) / { cur = $3; next }
			/^ *--- FAIL: / { failed[++n] = $3; next }
			/^ *--- (PASS|SKIP): / { next }
			cur != "" { if (++lines[cur] <= 40) out[cur] = out[cur] $0 "\n" }
			END { for (i = 1; i <= n; i++) printf "--- FAIL: %s\n%s", failed[i], out[failed[i]] }
		' "$log"
	elif grep -q '^panic: ' "$log"; then
		sed -n '/^panic: /,$p' "$log" | head -n 25
	elif [ "$rc" -ne 0 ]; then
		tail -n 25 "$log"
	fi
}

# gotest NAME DIR TIMEOUT RESERVE [ARGS...]: runs a test binary in DIR.
gotest() {
	local name=$1 dir=$2 want=$3 reserve=$4
	shift 4
	local t start rc pass fail skip status log="$L/$name.log"
	t=$(fit "$want" "$reserve")
	if [ "$t" -eq 0 ]; then
		row "$name" skipped - - - 0
		echo "$name: skipped, no time left of ${BUDGET}s" >> "$L/failures"
		FAILED=$((FAILED + 1))
		return
	fi
	start=$(date +%s)
	(cd "$ROOT/$dir" && timeout -k 10 $((t + 20)) "$G/tests/$name.test" -test.count=1 -test.v -test.timeout="${t}s" "$@") < /dev/null > "$log" 2>&1
	rc=$?
	pass=$(grep -c -- '^--- PASS' "$log")
	fail=$(grep -c -- '^--- FAIL' "$log")
	skip=$(grep -c -- '^--- SKIP' "$log")
	status=ok
	if [ "$rc" -ne 0 ]; then
		status=FAIL
		grep -q 'panic: test timed out' "$log" && status=timeout
		[ "$rc" -ge 124 ] && status=timeout
		[ "$fail" -eq 0 ] && FAILED=$((FAILED + 1)) # a crash or a timeout
		{
			echo "== $name ($status, exit $rc)"
			failures "$log" "$rc"
		} >> "$L/failures"
	fi
	TESTS_PASS=$((TESTS_PASS + pass)) TESTS_ALL=$((TESTS_ALL + pass + fail + skip)) FAILED=$((FAILED + fail))
	row "$name" "$status" "$pass" "$fail" "$skip" $(($(date +%s) - start))
	echo "$name: $status ($pass passed, $fail failed, $skip skipped)"
}

# sanitize TOOL NAME TIMEOUT RESERVE: one test binary under compute-sanitizer.
# A memory error, a race, a failing test or a timeout fails the step; API
# errors (a driver call that returned an error, some on purpose in the
# tests) are listed by call and result, not counted.
: > "$L/sanitizer"
sanitize() {
	local tool=$1 name=$2 want=$3 reserve=$4 t rc log errs api mem verdict dir
	log="$L/$name-$tool.log"
	dir=$(awk -v n="$name" '$1 == n { print $2 }' "$G/tests/index")
	if [ -z "$SANITIZER" ]; then
		echo "$name $tool: not run, compute-sanitizer not found" >> "$L/sanitizer"
		return
	fi
	t=$(fit "$want" "$reserve")
	if [ "$t" -eq 0 ]; then
		echo "$name $tool: skipped, no time left" >> "$L/sanitizer"
		echo "$name $tool: skipped, no time left of ${BUDGET}s" >> "$L/failures"
		FAILED=$((FAILED + 1))
		return
	fi
	(cd "$ROOT/$dir" && timeout -k 10 $((t + 20)) "$SANITIZER" --tool "$tool" --print-limit 50 \
		"$G/tests/$name.test" -test.count=1 -test.v -test.timeout="${t}s") < /dev/null > "$log" 2>&1
	rc=$?
	errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -n 1)
	api=$(grep -c 'Program hit CUDA_ERROR' "$log")
	mem=$((${errs:-0} - api))
	[ "$tool" = racecheck ] && mem=$(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9]*\) error.*/\1/p' "$log" | tail -n 1)
	verdict=ok
	if [ "${mem:-0}" -gt 0 ] || [ "$rc" -ne 0 ] || [ -z "$errs$(grep -m1 'RACECHECK SUMMARY' "$log")" ]; then
		verdict=FAIL
		FAILED=$((FAILED + 1))
		{
			echo "== $name under $tool ($verdict, exit $rc, ${mem:-?} memory errors or races)"
			failures "$log" "$rc"
			grep -m 10 -A 3 -E '^========= (Invalid|Race|Error|Leaked)' "$log"
		} >> "$L/failures"
	fi
	{
		printf '%s %s: %s, exit %s, %s; %s\n' "$name" "$tool" "$verdict" "$rc" \
			"$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -n 1 | sed 's/^========= //')" \
			"$(grep -c -- '^--- FAIL' "$log") failed tests"
		grep -o 'Program hit CUDA_ERROR_[A-Z_]* ([^)]*) due to "[^"]*" on CUDA API call to [A-Za-z0-9_]*' "$log" |
			sed 's/Program hit \(CUDA_ERROR_[A-Z_]*\).*call to \(.*\)/\2 \1/' | sort | uniq -c |
			awk '{ printf "    API error: %s %s x%d\n", $2, $3, $1 }'
	} >> "$L/sanitizer"
	echo "$name $tool: $verdict"
}

# pytest NAME FILE TIMEOUT RESERVE: a Python unittest suite.
pytest() {
	local name=$1 file=$2 want=$3 reserve=$4 t rc ran failed skipped log
	log="$L/$name.log"
	t=$(fit "$want" "$reserve")
	if [ "$t" -eq 0 ]; then
		row "$name" skipped - - - 0
		echo "$name: skipped, no time left of ${BUDGET}s" >> "$L/failures"
		FAILED=$((FAILED + 1))
		return
	fi
	local start
	start=$(date +%s)
	timeout -k 5 "$t" python3 -m unittest -v "$file" < /dev/null > "$log" 2>&1
	rc=$?
	ran=$(sed -n 's/^Ran \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	failed=$(sed -n 's/^FAILED (\(.*\))/\1/p' "$log" | tr ',' '\n' | awk -F= '/failures|errors/ { s += $2 } END { print s + 0 }')
	skipped=$(sed -n 's/.*skipped=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	ran=${ran:-0} failed=${failed:-0} skipped=${skipped:-0}
	local status=ok
	if [ "$rc" -ne 0 ]; then
		status=FAIL
		[ "$rc" -ge 124 ] && status=timeout
		[ "$failed" -eq 0 ] && failed=1 # it did not get as far as its tests
		{
			echo "== $name ($status, exit $rc)"
			grep -E -A 15 '^(FAIL|ERROR):' "$log" | head -n 60
			grep -q -E '^(FAIL|ERROR):' "$log" || tail -n 25 "$log"
		} >> "$L/failures"
	fi
	TESTS_PASS=$((TESTS_PASS + ran - failed - skipped)) TESTS_ALL=$((TESTS_ALL + ran)) FAILED=$((FAILED + failed))
	row "$name" "$status" $((ran - failed - skipped)) "$failed" "$skipped" $(($(date +%s) - start))
	echo "$name: $status ($ran ran, $failed failed, $skipped skipped)"
}

{
	echo "date    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit  $COMMIT (build: $BUILD)"
	echo "device  $DEV"
	echo "budget  ${BUDGET}s"
	if command -v nvidia-smi > /dev/null; then
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu     /'
		nvidia-smi > "$L/nvidia-smi.txt" 2>&1
	else
		echo "gpu     none (no nvidia-smi)"
	fi
	echo "sanitizer ${SANITIZER:-not found}"
} > "$L/env.txt"
timeout 60 "$G/cuarray" info -device "$DEV" < /dev/null > "$L/info.txt" 2>&1 || {
	echo "== cuarray info -device $DEV (exit $?)" >> "$L/failures"
	tail -n 10 "$L/info.txt" >> "$L/failures"
	FAILED=$((FAILED + 1))
}

# Per-package limits (seconds; the first GPU run took 0-6 s a package);
# every test phase keeps RESERVE seconds for the sanitizer and Python.
RESERVE=240
while read -r name dir; do
	case $name in
	kernels | transfer | interop | examples_fbp_tomo) want=120 ;;
	*) want=60 ;;
	esac
	gotest "$name" "$dir" "$want" "$RESERVE"
done < "$G/tests/index"

if [ "$BUILD" = cuda ] || [ -n "${CUARRAY_SANITIZER:-}" ]; then
	sanitize memcheck kernels 120 150
	sanitize racecheck kernels 120 110
	sanitize memcheck transfer 90 70
	sanitize memcheck pinned 60 45
else
	echo "sanitizer: not run, the bundle was built without -tags cuda" >> "$L/sanitizer"
fi

# The Python module: NumPy on sim (NumPy 2 there), then CuPy and PyTorch on the GPU.
pytest python-numpy python/test_cuarray.py 60 25
pytest python-plan python/test_plan.py 60 15
pytest python-alloc python/test_alloc.py 60 15
if [ "$BUILD" = cuda ]; then
	pytest python-gpu python/test_gpu.py 90 15
	# CuPy and PyTorch on cuarray's allocator, and check_max_slices on their methods
	pytest python-gpu-alloc python/test_gpu_alloc.py 120 15
fi

DAY="$(date -u +%Y-%m-%d)"
{
	if [ -s "$L/failures" ]; then
		echo "== failures"
		cat "$L/failures"
	fi
	echo "== compute-sanitizer"
	cat "$L/sanitizer"
	echo "== environment"
	cat "$L/env.txt"
	echo "== results ($(($(date +%s) - START))s; logs in logs.tar.gz)"
	printf '%-20s %-9s %5s %5s %5s %6s\n' name status pass fail skip time
	cat "$L/results"
	# A run: line only where nvidia-smi names a GPU: sim and the emulated CUDA driver are not one.
	if [ "$GPU" != none ] && [ "$GPU" != unknown ]; then
		echo "run: $DAY $GPU $COMMIT tests=$TESTS_PASS/$TESTS_ALL failed=$FAILED"
	else
		echo "no run: line: nvidia-smi names no GPU here (tests=$TESTS_PASS/$TESTS_ALL failed=$FAILED)"
	fi
} > "$L/summary.txt"
cp "$L/summary.txt" "$OUT/summary.txt"
tar -czf "$OUT/logs.tar.gz" -C "$L" .
rm -rf "$L"
echo
cat "$OUT/summary.txt"
