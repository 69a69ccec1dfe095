#!/usr/bin/env bash
# gpu-rehearse.sh DIR BUDGET: make gpu-rehearse. Runs the bundle in DIR
# (make gpu-bundle CUDA_TAGS='-tags cuda,cudaemu' GPU_DIR=DIR: the cuda
# backend on the emulated CUDA driver) as the GPU machine would run it:
# run.sh with CUARRAY_RUN_BUDGET=BUDGET, from the repository root, with no
# go command (PATH without it, GOROOT pointing nowhere: tests that need it
# skip, as there) and the planted hang (CUARRAY_PLANT_HANG=1). run.sh itself
# sets CUARRAY_EMULATED_DRIVER=devices=2 for a cudaemu bundle. Prints
# run.sh's output and summary (every package's time), writes them to
# DIR/rehearsal.txt, and fails unless the planted hang was reported hung
# with its blocked call and device/cuda ran again without it, and the last
# line reads rehearsal:, not run:.
set -u
d=${1:-build/gpu-rehearse}
budget=${2:-300}
cd "$(dirname "$0")/.."
[ "$(cat "$d/build" 2> /dev/null)" = cudaemu ] || {
	echo "gpu-rehearse: $d is not a cudaemu bundle (make gpu-rehearse builds one)" >&2
	exit 1
}
nogo=$(printf '%s\n' "$PATH" | tr ':' '\n' | while read -r p; do
	[ -n "$p" ] && [ ! -x "$p/go" ] && printf '%s\n' "$p"
done | paste -s -d: -)
rm -rf "$d/out"
start=$(date +%s)
env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE -u CUARRAY_EMULATED_DRIVER PATH="$nogo" GOROOT=/nonexistent \
	CUARRAY_PLANT_HANG=1 CUARRAY_RUN_BUDGET="$budget" OUT="$d/out" bash "$d/run.sh" 2>&1 | tee "$d/rehearsal.txt"
took=$(($(date +%s) - start))

fail=0
bad() {
	echo "gpu-rehearse: $*" >&2
	fail=1
}
sum="$d/out/summary.txt"
[ -s "$sum" ] || {
	echo "gpu-rehearse: run.sh wrote no $sum" >&2
	exit 1
}
grep -q -E '^device_cuda +hung +TestPlantedHang: cuStreamSynchronize ' "$sum" ||
	bad "the summary does not name device/cuda's TestPlantedHang as hung in cuStreamSynchronize"
read -r _ status _ _ hung _ runs _ < <(grep '^device_cuda ' "$sum" | tail -n 1) || true
[ "${status:-}" = hung ] && [ "${hung:-}" = 1 ] && [ "${runs:-}" = 2 ] ||
	bad "device_cuda: status ${status:-?}, ${hung:-?} hung, ${runs:-?} runs; want hung, 1, 2 (ran again without it, to the end)"
tail -n 1 "$sum" | grep -q '^rehearsal: ' || bad "the last line is not a rehearsal: line"
! grep -q '^run: ' "$sum" || bad "a run: line, which only a GPU run may print"
echo
echo "gpu-rehearse: ${took}s in all for a budget of ${budget}s; every package's time is in the table above"
[ "$fail" -eq 0 ] && echo "gpu-rehearse: ok: the planted hang was reported with its blocked call and cost only itself"
exit $fail
