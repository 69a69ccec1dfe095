#!/usr/bin/env bash
# cuda-fallback-check.sh: one binary for every machine. Builds cuarray with
# -tags cuda and runs `cuarray info` (text and -json) here. Where no GPU answers (CI: Debian's
# libcuda1 and no GPU, so cuInit fails) it must start, fall back to sim:0, exit 0 and say why in
# exactly one line on stderr; `info -device cuda:0` must be a one-line error (exit 1), not an exit
# from a library's init. Where a GPU answers it must open cuda:0 and say nothing. Then the Go tests
# of the same paths run with -tags cuda (device/cuda's GPU tests skip without a GPU), among them the
# library's own notice: a program's device.Open("") says why in one line on stderr, once per
# process, and CUARRAY_FALLBACK_NOTICE=off silences it.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "cuda-fallback-check: $*" >&2; exit 1; }

$GO build -tags cuda -o "$d/cuarray" ./cmd/cuarray
# cuInit failed (libcuda there, no GPU: CI), or libcuda.so.1 could not be loaded at all.
why='no CUDA (GPU answered \(cuInit: CUDA_ERROR_[A-Z_]+ \([0-9]+\): .+\)|driver \(.*libcuda.*\))'
notice="^cuarray: cuda:0: $why; using sim:0$"

rc=0; "$d/cuarray" info >"$d/out" 2>"$d/err" || rc=$?
[ "$rc" = 0 ] || fail "cuda-built 'cuarray info' exited $rc: $(cat "$d/err")"
if head -1 "$d/out" >"$d/first" && grep -q '^device *cuda:0 ' "$d/first"; then
	[ ! -s "$d/err" ] || fail "a GPU answered, yet info wrote on stderr: $(cat "$d/err")"
	echo "cuda-fallback-check: a GPU answered: cuarray info opened cuda:0"
else
	grep -q '^device *sim:0 (sim backend)$' "$d/first" || fail "info without a GPU: $(cat "$d/first")"
	[ "$(wc -l <"$d/err")" = 1 ] || fail "want one line on stderr, got: $(cat "$d/err")"
	grep -Eq "$notice" "$d/err" || fail "the notice is not as wanted: $(cat "$d/err")"
	echo "cuda-fallback-check: text: exit 0, sim:0, stderr: $(cat "$d/err")"

	rc=0; "$d/cuarray" info -json >"$d/out" 2>"$d/err2" || rc=$?
	[ "$rc" = 0 ] || fail "cuda-built 'cuarray info -json' exited $rc: $(cat "$d/err2")"
	cmp -s "$d/err" "$d/err2" || fail "-json's notice differs: $(cat "$d/err2")"
	grep -q '^    "name": "sim:0",$' "$d/out" || fail "info -json: the device is not sim:0"
	grep -Eq "^  \"fallback\": \"cuda:0: $why\"$" "$d/out" ||
		fail "info -json says no fallback: $(cat "$d/out")"
	echo "cuda-fallback-check: -json: exit 0, \"name\": \"sim:0\", $(grep '"fallback"' "$d/out" | sed 's/^ *//')"

	rc=0; "$d/cuarray" info -device cuda:0 >"$d/out" 2>"$d/err" || rc=$?
	[ "$rc" = 1 ] || fail "info -device cuda:0 without a GPU exited $rc, want 1"
	[ "$(wc -l <"$d/err")" = 1 ] && grep -Eq "^cuarray info: cuda:0: $why$" "$d/err" ||
		fail "info -device cuda:0: $(cat "$d/err")"
	echo "cuda-fallback-check: -device cuda:0: exit 1, $(cat "$d/err")"
fi

# Without libcuda.so.1 at all (a cuda build on a machine without the driver): the binary is not
# linked with libcuda (the patched gorgonia.org/cu loads it in cu.Init), so it must start and fall
# back the same way. The library is hidden in a private mount namespace, which needs root and
# unshare; elsewhere this part is skipped, saying so.
# (Each command's output goes to a file before it is searched: with pipefail, a reader that stops
# early, grep -q or awk's exit, makes the writer's SIGPIPE the pipeline's status, 141.)
ldd "$d/cuarray" >"$d/ldd"
if grep -q libcuda "$d/ldd"; then
	fail "the cuda build links libcuda.so.1: $(grep libcuda "$d/ldd")"
fi
ldconfig -p >"$d/ldconfig"
lib=$(awk '/libcuda\.so\.1 .*x86-64|libcuda\.so\.1 .*AArch64/ {print $NF; exit}' "$d/ldconfig")
if [ -n "$lib" ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	real=$(readlink -f "$lib")
	case "$(dirname "$real")" in
	*/nvidia/*) hide="mount -t tmpfs none '$(dirname "$real")'" ;; # Debian: the driver's own directory
	*) hide="mount --bind /dev/null '$real'" ;;                     # elsewhere: an empty file in its place
	esac
	rc=0
	unshare -m --propagation private sh -c "$hide && '$d/cuarray' info >'$d/out' 2>'$d/err'" || rc=$?
	[ "$rc" = 0 ] || fail "without libcuda.so.1 the cuda build exited $rc: $(cat "$d/err")"
	[ "$(wc -l <"$d/err")" = 1 ] && grep -Eq '^cuarray: cuda:0: no CUDA driver \(.*libcuda\.so\.1.*\); using sim:0$' "$d/err" ||
		fail "without libcuda.so.1: $(cat "$d/err")"
	echo "cuda-fallback-check: without libcuda.so.1: exit 0, stderr: $(cat "$d/err")"
else
	echo "cuda-fallback-check: skipped the run without libcuda.so.1 (needs libcuda installed, root and unshare)"
fi

$GO test -tags cuda -count=1 ./device/cuda
$GO test -tags cuda -count=1 -run '^(TestOpenDefault|TestOpenFallbackNoticeOncePerProcess|TestInfoDefaultDevice|TestInfoCUDASpecWithoutGPU)$' ./device ./cmd/cuarray
echo "cuda-fallback-check: ok"
