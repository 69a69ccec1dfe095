#!/usr/bin/env bash
# capture.sh writes the fixtures of gotestlog's tests: real outputs of a
# test binary run with -test.v, as .gpu/run.sh runs them (bash capture.sh,
# from this directory; it needs go and a C compiler).
#   tiny-*.log   the tiny package here (tiny/), TINY_CASE picking what goes
#                wrong, with a short -test.timeout; tiny-hang-rerun.log is
#                the run again with -test.skip of what tiny-hang.log ran
# Not made here:
#   cuda-emulated-*.log  device/cuda's test binary (-tags cuda,cudaemu) with
#                CUARRAY_PLANT_HANG=1, CUARRAY_EMULATED_DRIVER=devices=2 and
#                -test.timeout=16s (TestPlantedHang blocks in
#                cuStreamSynchronize), then again with -test.skip
#   h100-*.log   test binaries on an H100 (2026-11-27, driver 580): interop's
#                and kernels' real hangs at 1m55s, kernels' under
#                compute-sanitizer memcheck, and cmd/cuarray cut at 1m0s by a
#                slow test (its TestFaultCommands/bench_calibrate took ~50 s)
set -u
cd "$(dirname "$0")"
bin="$(mktemp -d)/tiny.test"
(cd tiny && go test -c -o "$bin" .) || exit 1
extra=()
run() { # run NAME TIMEOUT COMMAND...: COMMAND (env, timeout) runs the binary with ${extra[@]}
	local name=$1 t=$2
	shift 2
	(cd tiny && "$@" "$bin" -test.v -test.count=1 -test.timeout="$t" "${extra[@]}") > "$name.log" 2>&1
	echo "$name: exit $?"
}
run tiny-pass 30s env TINY_CASE=none
run tiny-fail 30s env TINY_CASE=
run tiny-hang 3s env TINY_CASE=hang
skip=$(go run .. -sh tiny-hang.log | sed -n "s/^skip_re='\(.*\)'$/\1/p")
extra=(-test.skip "$skip")
run tiny-hang-rerun 30s env TINY_CASE=hang
extra=()
run tiny-parallel 3s env TINY_CASE=parallel
run tiny-crash 30s env TINY_CASE=crash
run tiny-panic 30s env TINY_CASE=panic
run tiny-killed 60s timeout -s KILL 3 env TINY_CASE=kill
rm -rf "$(dirname "$bin")"
