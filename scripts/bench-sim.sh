#!/usr/bin/env bash
# bench-sim.sh (make bench): every sim figure of docs/perf.md, each with its peer in the same run,
# with the command the doc gives. It writes what each command prints to build/bench-sim.txt, then
# build/bench-sim.json (every figure: median, range, repetitions, the command, the commit) and
# build/bench-sim.md (the same as markdown tables: docs/perf.md's generated section), through
# internal/benchtable. A step that fails is recorded with its exit status and the run goes on;
# the script exits 1 at the end if any did.
#
#   bash scripts/bench-sim.sh            # all of them (about 10 minutes on 2 cores)
#   STEPS='pool ledger' bash scripts/bench-sim.sh   # some
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
PY=${PY:-/usr/bin/python3}
mkdir -p build
out=build/bench-sim.txt
: >"$out"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- 2>/dev/null || commit="$commit+dirty"
failed=0

quoted() { # the command as a shell line to copy: words with shell characters in single quotes
	local w line=""
	for w in "$@"; do
		case $w in *[!A-Za-z0-9_./=,:+-]*) line+=" '$w'" ;; *) line+=" $w" ;; esac
	done
	echo "${line# }"
}
step() { # step NAME COMMAND...: run it unless STEPS leaves it out
	local name=$1
	shift
	case " ${STEPS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
	echo "== $name: $(quoted "$@")" | tee -a "$out"
	"$@" 2>&1 | tee -a "$out"
	local rc=${PIPESTATUS[0]}
	echo "== rc $rc" >>"$out"
	[ "$rc" = 0 ] || failed=1
}
have_py() { "$PY" -c "import $1" >/dev/null 2>&1; }

step ledger $GO test -run '^$' -bench 'RecordCopy$|AllocFree$|Contention' -benchtime 300ms -count 3 ./accounting
step pool $GO test -run '^$' -bench 'AllocFree|MixedTrace' -benchtime 300ms -count 5 ./pool
step mixed-trace-seeds $GO test -count=1 -run 'TestMixedTraceOverhead' -v ./pool
step torch-allocator $GO test -run '^$' -bench TorchMallocFree -benchtime 20000x -count 3 ./libcuarray
if have_py numpy; then
	step gather $GO test -run '^$' -bench HostGather -benchtime 9x ./devarray
else
	echo "bench: NumPy is not installed for $PY (make python-deps): the gather's peer is left out"
fi
step strided $GO test -run '^$' -bench StridedDownload -benchtime 5x ./devarray
step staged $GO test -run '^$' -bench StagedCeiling -benchtime 5x -count 5 ./bench
step planner $GO test -count=1 -run 'TestPlannerOnModelledSim' -v ./bench
step choose $GO test -run '^$' -bench Choose ./transfer
step bidir $GO test -count=4 -run 'TestBidir' -v ./bench
step registered $GO test -run '^$' -bench Registered -benchtime 20x -count 3 ./transfer
step sim-ceiling $GO run ./cmd/cuarray bench -sizes 4KiB,1MiB,16MiB -budget 64MiB -q
step sim-ceiling-test $GO test -count=1 -run 'TestRunOnSimHasCeilings|TestSimCeilingRefuses' -v ./bench
step calibrate-link $GO run ./cmd/cuarray bench -device sim:0 -calibrate -pcie 0.001 -sizes 4KiB,64KiB -paths direct,pinned -profile build/calibrate-link.json -q
step pipeline $GO test -run '^$' -bench PipelineOverlap -benchtime 3x -count 5 ./examples/fbp/tomo
if have_py skimage; then
	step fbp-skimage "$PY" bench/peers/skimage_fbp.py
else
	echo "bench: scikit-image is not installed for $PY (make bench-deps): sim FBP without its peer"
	step fbp $GO test -run '^$' -bench 'FBP256' -benchtime 5x ./kernels
fi
if have_py numpy; then
	case " ${STEPS:-export} " in *" export "*) $GO build -buildmode=c-shared -o build/libcuarray.so ./libcuarray || failed=1 ;; esac
	step export env CUARRAY_LIB=build/libcuarray.so "$PY" bench/peers/export_cost.py --device sim:0 --json
fi
if ! { [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] || ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; }; then
	echo "bench: no libcuda.so.1 here (make cuda-deps): the driver-call comparison is left out"
elif ! GOFLAGS=-mod=mod GOPROXY=off $GO mod download gorgonia.org/cu@v0.9.6 >/dev/null 2>&1; then
	echo "bench: upstream gorgonia.org/cu v0.9.6 is not in the module cache (go mod download gorgonia.org/cu@v0.9.6): the driver-call comparison is left out"
else
	step driver-call bash third_party/gorgonia-cu/bench.sh 20
fi

$GO run ./internal/benchtable -in "$out" -commit "$commit" -date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
	-json build/bench-sim.json -md build/bench-sim.md || failed=1
echo "bench: build/bench-sim.json and build/bench-sim.md (commit $commit)$([ $failed = 0 ] || echo '; a step failed, see its exit status')"
exit $failed
