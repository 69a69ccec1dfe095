#!/usr/bin/env bash
# gpu-hang-check.sh DIR: make gpu-hang-check. .gpu/run.sh's hang handling
# (scripts/gpu-run.sh, internal/gotestlog) checked where CI runs, in well
# under a minute once built: a bundle of one package in DIR (device/cuda's
# test binary built with EMU_TAGS, the cuda backend on the emulated CUDA
# driver, gotestlog and the scripts), run by run.sh with the planted hang
# (CUARRAY_PLANT_HANG=1: TestPlantedHang blocks in cuStreamSynchronize) and
# a 20 s limit. It must report the test hung with the call, run the package
# again without it and without what had run, so that every test the binary
# lists is accounted for (passed, skipped or hung), and print a rehearsal:
# line, never a run: line. The go command is hidden from the test binary
# (GOROOT), as on the GPU machine.
set -eu
d=${1:-build/gpu-hang-check}
GO=${GO:-go}
EMU_TAGS=${EMU_TAGS:--tags cuda,cudaemu}
cd "$(dirname "$0")/.."
rm -rf "$d"
mkdir -p "$d/tests"
# shellcheck disable=SC2086 # EMU_TAGS is two words
$GO test $EMU_TAGS -c -o "$d/tests/device_cuda.test" ./device/cuda
CGO_ENABLED=0 $GO build -o "$d/gotestlog" ./internal/gotestlog
cp scripts/gpu-run.sh "$d/run.sh"
cp scripts/gpu-unpack.sh "$d/unpack.sh"
echo "device_cuda device/cuda" > "$d/tests/index"
echo cudaemu > "$d/build"
git rev-parse --short=12 HEAD > "$d/commit" 2> /dev/null || echo unknown > "$d/commit"

# Every test and example the binary runs (benchmarks do not run).
want=$(cd device/cuda && "../../$d/tests/device_cuda.test" -test.list '.*' | grep -c -E '^(Test|Example|Fuzz)')
start=$(date +%s)
env -u CUARRAY_TEST_DEVICE -u CUARRAY_DEVICE GOROOT=/nonexistent CUARRAY_PLANT_HANG=1 \
	CUARRAY_RUN_PKGS=device_cuda CUARRAY_RUN_LIMIT=20 CUARRAY_RUN_BUDGET=120 OUT="$d/out" \
	bash "$d/run.sh" > "$d/run.txt" 2>&1 || true
took=$(($(date +%s) - start))

fail=0
bad() {
	echo "gpu-hang-check: $*" >&2
	fail=1
}
sum="$d/out/summary.txt"
[ -s "$sum" ] || {
	cat "$d/run.txt" >&2
	bad "run.sh wrote no $sum"
	exit 1
}
# name status pass fail hung skip runs time
read -r _ status pass failed hung skip runs secs < <(grep '^device_cuda ' "$sum" | tail -n 1) || true
[ "${status:-}" = hung ] || bad "device_cuda's status is '${status:-none}', not hung (the package's tests must all have run)"
[ "${hung:-}" = 1 ] || bad "device_cuda: ${hung:-no} hung tests, not 1"
[ "${failed:-}" = 0 ] || bad "device_cuda: ${failed:-?} failed tests"
[ "${runs:-}" = 2 ] || bad "device_cuda ran ${runs:-?} times, not twice (the run again without the hung test)"
[ $((${pass:-0} + ${skip:-0} + ${hung:-0})) -eq "$want" ] ||
	bad "passed ${pass:-?} + skipped ${skip:-?} + hung ${hung:-?} is not the $want tests the binary lists"
grep -q -E '^device_cuda +hung +TestPlantedHang: cuStreamSynchronize .*called from device/cuda\.\(\*stream\)\.Synchronize' "$sum" ||
	bad "the summary does not name TestPlantedHang as hung in cuStreamSynchronize"
grep -q -E '^rehearsal: .* failed=1 hung=1 ' "$sum" || bad "no 'rehearsal: ... failed=1 hung=1' line"
! grep -q '^run: ' "$sum" || bad "a run: line, which only a GPU run may print"
[ "${secs%s}" -le 45 ] 2> /dev/null || bad "device_cuda took ${secs:-?}, more than its 20 s limit and one quick run again allow"

sed -n '/^== hung/,$p' "$sum"
grep -A4 'hung: TestPlantedHang' "$sum" | head -n 5
if [ "$fail" -ne 0 ]; then
	echo "gpu-hang-check: failed; run.sh's output:" >&2
	cat "$d/run.txt" >&2
	exit 1
fi
echo "gpu-hang-check: ok: TestPlantedHang hung and cost only itself ($pass passed, $skip skipped, $hung hung of $want; $runs runs, $secs; ${took}s in all)"
