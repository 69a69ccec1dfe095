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
# and summary.txt: the failures inline (each failing test's output), the
# sanitizer's runs, the hung tests, the environment, a short table, and,
# as the last line,
#   run: DATE GPU COMMIT tests=PASSED/TOTAL failed=N
# As it goes it prints a word a step (NAME:RESULT) on one line; last, the
# summary cut to one screen, at most 50 lines: a line for each failure and
# hung test (as many as fit), the sanitizer's runs, the table, the run: line.
# (PASSED/TOTAL: top-level tests and Python tests that passed, of all that
# ran; N: failed tests, hung tests, plus steps that crashed, timed out or
# were skipped, plus sanitizer runs that found a memory error or a race).
#
# A hang costs one test, not its package: each test binary runs with
# -test.v and a -test.timeout under the script's own kill, so a hang ends
# in Go's timeout panic, which names the tests running and dumps every
# goroutine. gotestlog (internal/gotestlog, built into the bundle) reads
# that: the hung tests, each with the driver call it was blocked in, and
# what already ran; the package then runs again with -test.skip of both,
# while time is left, a run names a new hung (or crashed) test and fewer
# than CUARRAY_RUN_ATTEMPTS (default 4) runs were made. The table's hung
# column and the "hung and crashed tests" section name them apart from
# the failures; the sanitizer runs of a package skip its hung tests too.
#
# CUARRAY_RUN_PKGS='kernels interop' runs only those packages' tests (the
# names in .gpu/tests/index), and nothing else: no cuarray info, no
# sanitizer, no Python. CUARRAY_RUN_LIMIT=S gives every package S seconds
# instead of its own limit.
#
# Without a GPU, rehearse it (make gpu-rehearse) on a bundle built with
# `make gpu-bundle CUDA_TAGS='-tags cuda,cudaemu'`: the cuda backend on the
# emulated CUDA driver (CUARRAY_EMULATED_DRIVER, default devices=2), on
# cuda:0; or with `CUDA_TAGS=`: sim:0 (CUARRAY_TEST_DEVICE picks another).
# Either way the GPU Python suites are left out, the sanitizer runs only
# when CUARRAY_SANITIZER names one (a stand-in that replays a log will do),
# and the last line reads "rehearsal: ...", never "run:": only a cuda
# bundle on a machine where nvidia-smi names a GPU prints a run: line.
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
case $BUILD in
cuda) DEV="${CUARRAY_TEST_DEVICE:-cuda:0}" ;;
cudaemu)
	# the cuda backend on the emulated driver: two emulated GPUs, as make cuda-emu-test runs it
	DEV="${CUARRAY_TEST_DEVICE:-cuda:0}"
	export CUARRAY_EMULATED_DRIVER="${CUARRAY_EMULATED_DRIVER:-devices=2}"
	;;
*) DEV="${CUARRAY_TEST_DEVICE:-sim:0?mem=256MiB}" ;;
esac
export CUARRAY_TEST_DEVICE="$DEV"
PKGS="${CUARRAY_RUN_PKGS:-}"         # only these packages, nothing else
LIMIT="${CUARRAY_RUN_LIMIT:-}"       # seconds a package, instead of its own limit
ATTEMPTS="${CUARRAY_RUN_ATTEMPTS:-4}" # runs of one package at most
TESTLOG="$G/gotestlog"               # internal/gotestlog
# The bundle's cuda libcuarray, unpacked from bins.tar.xz: python.test, libcuarray.test's C and C++
# callers and the Python suites load it, as there is no go command there to build one
# (internal/toolchain.Library).
export CUARRAY_LIB="$G/libcuarray.so"
# The conformance tests' observations (device/cuda/conformance, observe_test.go): what the driver
# answered where no GPU had, as JSON in the logs, to check the emulated driver's table against.
export CUARRAY_CONFORMANCE_JSON="$L/conformance-observations.json"
# The PTX ISA suite (device/kernel/isacases): every case whose result differs from the ISA's
# reading, as JSON in the logs: where the GPU disagrees, hardware wins and the table changes.
export CUARRAY_ISA_JSON="$L/isa-disagreements.json"
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
# CUPTI's unified-memory counters (device/cuda/cupti) load libcupti at run time, by name
# (libcupti.so) or from $CUARRAY_CUPTI: where the dynamic linker does not know it, the CUDA
# toolkit's copy, else the one a Python package brought.
if [ -z "${CUARRAY_CUPTI+set}" ] && ! ldconfig -p 2> /dev/null | grep -q 'libcupti\.so'; then
	for c in /usr/local/cuda*/extras/CUPTI/lib64/libcupti.so /usr/local/cuda*/targets/*/lib/libcupti.so \
		/usr/local/cuda*/extras/CUPTI/lib64/libcupti.so.* /usr/local/lib/python3*/dist-packages/nvidia/*/lib/libcupti.so.* \
		/usr/lib/python3/dist-packages/nvidia/*/lib/libcupti.so.*; do
		[ -f "$c" ] && export CUARRAY_CUPTI="$c" && break
	done
fi

# left: seconds left of the budget. fit T RESERVE: T, cut so that RESERVE
# seconds stay for what comes after; 0 when less than 10 would be left.
left() { echo $((BUDGET - ($(date +%s) - START))); }
fit() {
	local t=$1 avail=$(($(left) - $2))
	[ "$avail" -lt "$t" ] && t=$avail
	[ "$t" -lt 10 ] && t=0
	echo "$t"
}

# progress NAME:RESULT: one word on the progress line, which the summary follows (the table has
# every step's counts; a package that ran again after a hang shows NAME:again first).
progress() { printf '%s ' "$1"; }

# The table's rows: name status pass fail hung skip runs seconds (status:
# ok, FAIL, hung, crash, timeout, skipped; ",cut" when the package's tests
# did not all run: no time, or no run left, after a hang). FAILED counts
# failures (hung tests among them), TESTS_PASS and TESTS_ALL the tests,
# TESTS_HUNG the hung ones.
: > "$L/results"
: > "$L/hung"
TESTS_PASS=0 TESTS_ALL=0 TESTS_HUNG=0 FAILED=0
row() { printf '%-24s %-9s %5s %5s %5s %5s %4s %5ss\n' "$@" >> "$L/results"; }

# failed_output LOG: each failing test's own output (go test -v), at most
# 40 lines a test.
failed_output() {
	awk '
		/^=== (RUN|CONT|PAUSE|NAME) / { cur = $3; next }
		/^ *--- FAIL: / { failed[++n] = $3; next }
		/^ *--- (PASS|SKIP): / { next }
		cur != "" { if (++lines[cur] <= 40) out[cur] = out[cur] $0 "\n" }
		END { for (i = 1; i <= n; i++) printf "--- FAIL: %s\n%s", failed[i], out[failed[i]] }
	' "$1"
}

# failures LOG RC: each failing test's own output; for a timeout, the tests
# that were running; for a binary that failed otherwise without a failing
# test (a crash), the log's first panic or last 25 lines.
failures() {
	local log=$1 rc=$2
	if grep -q 'panic: test timed out' "$log"; then
		sed -n '/panic: test timed out/,/^$/p' "$log" | head -n 20
	elif grep -q -- '^ *--- FAIL' "$log"; then
		failed_output "$log"
	elif grep -q '^panic: ' "$log"; then
		sed -n '/^panic: /,$p' "$log" | head -n 25
	elif [ "$rc" -ne 0 ]; then
		tail -n 25 "$log"
	fi
}

# gotest NAME DIR TIMEOUT RESERVE [ARGS...]: runs a test binary in DIR, and
# again without the tests that hung (or crashed) and those that had run,
# while a run names a new one and time and runs are left (see the top).
gotest() {
	local name=$1 dir=$2 want=$3 reserve=$4
	shift 4
	local t start rc rcs="" status log="$L/$name.log" logs=() runs=0 extra=() l
	local pass=0 fail=0 skip=0 hung=0 crash=0 done=0 ended=0 skip_re="" stuck_re=""
	[ -n "$LIMIT" ] && want=$LIMIT
	t=$(fit "$want" "$reserve")
	if [ "$t" -eq 0 ]; then
		row "$name" skipped - - - - 0 0
		echo "$name: skipped, no time left of ${BUDGET}s" >> "$L/failures"
		FAILED=$((FAILED + 1))
		return
	fi
	start=$(date +%s)
	while :; do
		runs=$((runs + 1))
		[ "$runs" -gt 1 ] && log="$L/$name.run$runs.log"
		logs+=("$log")
		extra=()
		[ -n "$skip_re" ] && extra=(-test.skip "$skip_re")
		# GOTRACEBACK=all: a crash dumps every goroutine too, as the timeout panic does
		(cd "$ROOT/$dir" && GOTRACEBACK=all timeout -k 10 $((t + 20)) "$G/tests/$name.test" -test.count=1 -test.v \
			-test.timeout="${t}s" ${extra[@]+"${extra[@]}"} "$@") < /dev/null > "$log" 2>&1
		rc=$?
		rcs="$rcs${rcs:+, }$rc"
		if [ -x "$TESTLOG" ]; then
			eval "$("$TESTLOG" -sh "${logs[@]}")"
		else # a bundle without gotestlog: the counts of this run, and no run again
			pass=$(grep -c -- '^--- PASS' "$log") fail=$(grep -c -- '^--- FAIL' "$log") skip=$(grep -c -- '^--- SKIP' "$log")
			done=0 ended=0
			[ "$rc" -eq 0 ] && done=1
		fi
		[ "$done" -eq 1 ] || [ "$ended" -eq 0 ] && break
		[ "$runs" -lt "$ATTEMPTS" ] || break
		t=$(fit "$want" "$reserve")
		[ "$t" -eq 0 ] && break
		progress "$name:again"
	done
	status=ok
	if [ "$rc" -ne 0 ] || [ "$hung" -gt 0 ] || [ "$crash" -gt 0 ] || [ "$done" -eq 0 ]; then
		status=FAIL
		if [ "$hung" -gt 0 ]; then
			status=hung
		elif [ "$crash" -gt 0 ]; then
			status=crash
		elif [ "$done" -eq 0 ] && { [ "$rc" -ge 124 ] || grep -q 'panic: test timed out' "$log"; }; then
			status=timeout
		fi
		[ "$done" -eq 0 ] && [ "$status" != timeout ] && status="$status,cut"
		# a crash or a timeout that no test explains
		[ $((fail + hung + crash)) -eq 0 ] && FAILED=$((FAILED + 1))
		{
			echo "== $name ($status; $runs run(s), exit $rcs)"
			if [ -x "$TESTLOG" ]; then
				"$TESTLOG" -report "${logs[@]}" | sed "s|$L/||"
			fi
			for l in "${logs[@]}"; do
				grep -q -- '^ *--- FAIL' "$l" && failed_output "$l"
				if ! grep -q 'panic: test timed out' "$l" && grep -q -E '^(panic|fatal error): ' "$l"; then
					sed -n -E '/^(panic|fatal error): /,$p' "$l" | head -n 25
				fi
			done
			[ -x "$TESTLOG" ] || failures "$log" "$rc"
		} >> "$L/failures"
		if [ -x "$TESTLOG" ]; then
			"$TESTLOG" -stuck "${logs[@]}" | awk -F '\t' -v p="$name" '{ printf "%-24s %-5s %s: %s\n", p, $1, $2, $3 }' >> "$L/hung"
			[ -n "$stuck_re" ] && printf '%s\n' "$stuck_re" > "$L/$name.stuck"
		fi
	fi
	TESTS_PASS=$((TESTS_PASS + pass)) TESTS_ALL=$((TESTS_ALL + pass + fail + skip + hung + crash))
	TESTS_HUNG=$((TESTS_HUNG + hung)) FAILED=$((FAILED + fail + hung + crash))
	row "$name" "$status" "$pass" "$fail" "$hung" "$skip" "$runs" $(($(date +%s) - start))
	progress "$name:$status"
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
	# the tests that hung (or crashed) in the package's own run would only end this one the same way
	local extra=() skipped=""
	if [ -s "$L/$name.stuck" ]; then
		skipped=" (skipping $(cat "$L/$name.stuck"), which hung or crashed in its test run)"
		extra=(-test.skip "$(cat "$L/$name.stuck")")
	fi
	(cd "$ROOT/$dir" && timeout -k 10 $((t + 20)) "$SANITIZER" --tool "$tool" --print-limit 50 \
		"$G/tests/$name.test" -test.count=1 -test.v -test.timeout="${t}s" ${extra[@]+"${extra[@]}"}) < /dev/null > "$log" 2>&1
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
		printf '%s %s: %s, exit %s, %s; %s%s\n' "$name" "$tool" "$verdict" "$rc" \
			"$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -n 1 | sed 's/^========= //')" \
			"$(grep -c -- '^--- FAIL' "$log") failed tests" "$skipped"
		grep -o 'Program hit CUDA_ERROR_[A-Z_]* ([^)]*) due to "[^"]*" on CUDA API call to [A-Za-z0-9_]*' "$log" |
			sed 's/Program hit \(CUDA_ERROR_[A-Z_]*\).*call to \(.*\)/\2 \1/' | sort | uniq -c |
			awk '{ printf "    API error: %s %s x%d\n", $2, $3, $1 }'
	} >> "$L/sanitizer"
	progress "$name-$tool:$verdict"
}

# pytest NAME FILE TIMEOUT RESERVE: a Python unittest suite.
pytest() {
	local name=$1 file=$2 want=$3 reserve=$4 t rc ran failed skipped log
	log="$L/$name.log"
	t=$(fit "$want" "$reserve")
	if [ "$t" -eq 0 ]; then
		row "$name" skipped - - - - 0 0
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
	row "$name" "$status" $((ran - failed - skipped)) "$failed" - "$skipped" 1 $(($(date +%s) - start))
	progress "$name:$status"
}

{
	echo "date    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit  $COMMIT (build: $BUILD)"
	echo "device  $DEV${CUARRAY_EMULATED_DRIVER:+ (emulated CUDA driver: $CUARRAY_EMULATED_DRIVER)}"
	echo "budget  ${BUDGET}s${PKGS:+, packages: $PKGS}${LIMIT:+, ${LIMIT}s a package}"
	if command -v nvidia-smi > /dev/null; then
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu     /'
		nvidia-smi > "$L/nvidia-smi.txt" 2>&1
	else
		echo "gpu     none (no nvidia-smi)"
	fi
	echo "sanitizer ${SANITIZER:-not found}"
	echo "cupti   ${CUARRAY_CUPTI:-libcupti.so by name}"
} > "$L/env.txt"
if [ -z "$PKGS" ]; then
	timeout 60 "$G/cuarray" info -device "$DEV" < /dev/null > "$L/info.txt" 2>&1 || {
		echo "== cuarray info -device $DEV (exit $?)" >> "$L/failures"
		tail -n 10 "$L/info.txt" >> "$L/failures"
		FAILED=$((FAILED + 1))
	}
else
	for p in $PKGS; do
		awk -v n="$p" '$1 == n { f = 1 } END { exit !f }' "$G/tests/index" || {
			echo "$p: not in $G/tests/index" >> "$L/failures"
			FAILED=$((FAILED + 1))
		}
	done
fi

# Per-package limits (seconds; the first GPU run took 0-6 s a package);
# every test phase keeps RESERVE seconds for what runs after it: the
# sanitizer and the GPU Python suites on a cuda bundle, else the NumPy ones.
RESERVE=60
{ [ "$BUILD" = cuda ] || [ -n "${CUARRAY_SANITIZER:-}" ]; } && RESERVE=240
[ -n "$PKGS" ] && RESERVE=0
while read -r name dir; do
	[ -z "$PKGS" ] || case " $PKGS " in *" $name "*) ;; *) continue ;; esac
	case $name in
	kernels | transfer | interop | examples_fbp_tomo) want=120 ;;
	*) want=60 ;;
	esac
	if [ "$BUILD" = cudaemu ] && [ "$name" = examples_fbp_tomo ]; then
		# as make cuda-emu-test runs it: the reconstructions' kernels as their Go references
		# (package kernels runs the same kernels interpreted); interpreted, its volumes take
		# minutes, and the interpreter's own allocations are minor faults its clock test counts
		CUARRAY_EMULATED_DRIVER="$CUARRAY_EMULATED_DRIVER&kernels=go" gotest "$name" "$dir" "$want" "$RESERVE"
		continue
	fi
	gotest "$name" "$dir" "$want" "$RESERVE"
done < "$G/tests/index"

if [ -n "$PKGS" ]; then
	echo "sanitizer: not run, CUARRAY_RUN_PKGS names the packages to run" >> "$L/sanitizer"
elif [ "$BUILD" = cuda ] || [ -n "${CUARRAY_SANITIZER:-}" ]; then
	sanitize memcheck kernels 120 150
	sanitize racecheck kernels 120 110
	sanitize memcheck transfer 90 70
	sanitize memcheck pinned 60 45
else
	echo "sanitizer: not run, the bundle was built without -tags cuda" >> "$L/sanitizer"
fi

# The Python module: NumPy on sim (NumPy 2 there), then CuPy and PyTorch on the GPU.
if [ -z "$PKGS" ]; then
	pytest python-numpy python/test_cuarray.py 60 25
	pytest python-plan python/test_plan.py 60 15
	pytest python-alloc python/test_alloc.py 60 15
	if [ "$BUILD" = cuda ]; then
		pytest python-gpu python/test_gpu.py 90 15
		# CuPy and PyTorch on cuarray's allocator, and check_max_slices on their methods
		pytest python-gpu-alloc python/test_gpu_alloc.py 120 15
	fi
fi

DAY="$(date -u +%Y-%m-%d)"
{
	if [ -s "$L/failures" ]; then
		echo "== failures"
		cat "$L/failures"
	fi
	echo "== compute-sanitizer"
	cat "$L/sanitizer"
	if [ -s "$L/hung" ]; then
		echo "== hung and crashed tests, each with the driver call it was blocked in"
		cat "$L/hung"
	fi
	echo "== environment"
	cat "$L/env.txt"
	echo "== results ($(($(date +%s) - START))s; hung tests, counted as failed: $TESTS_HUNG; logs in logs.tar.gz)"
	printf '%-24s %-9s %5s %5s %5s %5s %4s %6s\n' name status pass fail hung skip runs time
	cat "$L/results"
	# A run: line only for a cuda bundle where nvidia-smi names a GPU: sim and the emulated CUDA
	# driver are not one, and a partial run (CUARRAY_RUN_PKGS) is not the run.
	if [ "$BUILD" = cuda ] && [ -z "$PKGS" ] && [ "$GPU" != none ] && [ "$GPU" != unknown ]; then
		echo "run: $DAY $GPU $COMMIT tests=$TESTS_PASS/$TESTS_ALL failed=$FAILED"
	else
		why="build $BUILD"
		[ "$GPU" = none ] || [ "$GPU" = unknown ] && why="$why, nvidia-smi names no GPU"
		[ -n "$PKGS" ] && why="$why, packages $PKGS only"
		echo "rehearsal: $DAY $BUILD $COMMIT tests=$TESTS_PASS/$TESTS_ALL failed=$FAILED hung=$TESTS_HUNG (not a GPU run: $why)"
	fi
} > "$L/summary.txt"

# What it prints last: the summary cut to one screen, at most 50 lines. The results table, the
# environment's two lines and the sanitizer's runs (without their API errors) always; then a line
# for each failure and each hung or crashed test, as many as fit (summary.txt has them in full,
# each failing test's output too; a step skipped for lack of time is in the table or the
# sanitizer's lines already).
{
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $COMMIT (build: $BUILD), device $DEV, budget ${BUDGET}s"
	sed -n 's/^gpu  *//p' "$L/env.txt" | head -n 1 | sed 's/^/gpu /'
	echo "== compute-sanitizer"
	grep -v '^    API error' "$L/sanitizer"
	sed -n '/^== results/,$p' "$L/summary.txt"
} > "$L/screen.tail"
{
	# a line for each "== " of the failures, with its failing top-level tests
	awk '/^== / { if (h != "") print h; h = $0; sep = ": "; delete seen; next }
		/^--- FAIL: / && $3 !~ /\// && !seen[$3]++ { h = h sep $3; sep = ", "; next }
		/: not in / { print }
		END { if (h != "") print h }' "$L/failures" 2> /dev/null
	[ -s "$L/hung" ] && sed 's/^/hung: /' "$L/hung"
} | cut -c 1-160 > "$L/screen.fail"
room=$((50 - 1 - $(wc -l < "$L/screen.tail")))
{
	if [ -s "$L/screen.fail" ]; then
		n=$(wc -l < "$L/screen.fail")
		echo "== failed or hung (each in full in summary.txt; logs in logs.tar.gz)"
		if [ "$n" -gt "$room" ]; then
			[ "$room" -gt 1 ] && head -n $((room - 1)) "$L/screen.fail"
			[ "$room" -gt 0 ] && echo "... $((n - (room > 1 ? room - 1 : 0))) more lines in summary.txt"
		else
			cat "$L/screen.fail"
		fi
	fi
	cat "$L/screen.tail"
} > "$L/screen.txt"
cp "$L/summary.txt" "$OUT/summary.txt"
tar -czf "$OUT/logs.tar.gz" -C "$L" .
echo
cat "$L/screen.txt"
rm -rf "$L"
