#!/usr/bin/env bash
# mutate-cuda.sh: deliberate breaks of the CUDA half that the tests on the emulated CUDA driver must
# catch. Each break is made in a copy of the working tree (the tree itself is never touched), the
# tests that should catch it run there with -tags cuda,cudaemu, and the script prints which tests
# failed. It exits non-zero when a break survives (its tests pass) or no longer applies (the code
# it edits changed: update the break). Needs cuda.h (make cuda-deps); takes a few minutes.
#
#   bash scripts/mutate-cuda.sh            every break
#   bash scripts/mutate-cuda.sh settle     the breaks whose name contains "settle"
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
only=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

survived=0
# mutant NAME FILE PERL-SUBSTITUTION ENV PACKAGES RUN-REGEX
mutant() {
	local name=$1 file=$2 subst=$3 env=$4 pkgs=$5 run=$6
	[[ -z $only || $name == *"$only"* ]] || return 0
	rm -rf "$work/tree" && mkdir -p "$work/tree"
	(cd "$root" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work/tree"
	cp "$work/tree/$file" "$work/before"
	perl -0pi -e "$subst" "$work/tree/$file"
	if cmp -s "$work/before" "$work/tree/$file"; then
		echo "mutate-cuda: $name: the break no longer applies to $file (update it)"
		survived=1
		return 0
	fi
	echo "mutate-cuda: $name ($file), testing $pkgs -run '$run' ${env:+with $env}"
	local log="$work/$name.log"
	if (cd "$work/tree" && env $env CUARRAY_TEST_DEVICE= go test -tags cuda,cudaemu -count=1 -run "$run" $pkgs) >"$log" 2>&1; then
		echo "mutate-cuda:   SURVIVED: every test passed"
		survived=1
		return 0
	fi
	local caught
	caught=$(grep -oE -- '--- FAIL: [^ ]+' "$log" | sed 's/--- FAIL: //' | sort -u | head -8 | tr '\n' ' ')
	if [[ -z $caught ]]; then
		echo "mutate-cuda:   the tests did not run (a build failure is not a catch):"
		tail -5 "$log" | sed 's/^/    /'
		survived=1
		return 0
	fi
	echo "mutate-cuda:   caught by: $caught"
}

# 1. The copy contract's wait: synchronous copies and memsets return once queued.
mutant settle device/cuda/complete.go \
	's/func settle\(\) error \{ return check\(code\(C\.cuarray_sync_legacy\(\)\)\) \}/func settle() error { return nil }/' \
	"CUARRAY_EMULATED_DRIVER=latency=1ms" "./device/ ./devarray/" 'CompleteOnReturn'

# 2. libcuarray leaves the device's context current on its caller's thread.
mutant restore libcuarray/ctx_cuda.go \
	's/func \(s savedContext\) restore\(\) \{\n\tif s\.ok \{\n\t\tC\.cuarray_ctx_restore\(s\.ctx\)\n\t\}\n\}/func (s savedContext) restore() {}/' \
	"" "./libcuarray/" 'TestEntryPointsRestoreTheCallersContext'

# 3. A kernel method returns before its kernel is done.
mutant launch-wait kernels/kernels.go \
	's/(if err := f\.Launch\(\[3\]uint32\{uint32\(max\(blocks, 1\)\), 1, 1\}, \[3\]uint32\{blockSize, 1, 1\}, 0, k\.stream, args\); err != nil \{\n\t\treturn err\n\t\}\n\t)return k\.settle\(\)/$1return nil/' \
	"CUARRAY_EMULATED_DRIVER=latency=1ms" "./kernels/" 'TestKernelsAreCompleteOnReturn'

# 4. Open sets the primary context's flags while another library holds it active (with a driver of
#    CUDA 11.0 or newer, the emulated driver's, Open only retains the context).
mutant active-flags device/cuda/primary.go \
	's/(\tif mapHostImplicit\(\) \{\n)/$1\t\tif flags, active, err := dev.PrimaryCtxState(); err == nil && active != 0 {\n\t\t\t_ = dev.SetPrimaryCtxFlags(flags | cu.MapHost)\n\t\t}\n/' \
	"" "./device/cuda/conformance/" 'TestContexts'

# 5. A stub bound to the unversioned symbol cuMemAlloc (the 32-bit API) instead of cuMemAlloc_v2, the
#    one cuda.h maps it to: the emulated driver, like this one, answers only to the versioned names.
mutant v1-symbol third_party/gorgonia-cu/lazy_linux.c \
	's/(static const char \*const names\[CUARRAY_LAZY_COUNT\] = \{CUARRAY_LAZY_FUNCS\(CUARRAY_NAME\)\};)/#undef cuMemAlloc\n$1\n#define cuMemAlloc cuMemAlloc_v2/' \
	"" "./device/cuda/conformance/" 'TestDeviceMemory'

if [[ $survived != 0 ]]; then
	echo "mutate-cuda: a break survived or no longer applies" >&2
	exit 1
fi
echo "mutate-cuda: every break was caught"
