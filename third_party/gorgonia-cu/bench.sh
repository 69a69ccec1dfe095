#!/usr/bin/env bash
# bench.sh [ROUNDS]: the per-call cost of a cheap driver call (cuDriverGetVersion through cgo, as
# cu.Version makes it) with upstream gorgonia.org/cu v0.9.6 (linked with -lcuda: a call through
# the PLT) and with this copy (a call through lazy_linux.c's stub), in alternating rounds of one
# million calls each; prints each side's median and best ns/op and their ratios. It needs
# libcuda.so.1 and gcc, not a GPU: upstream's init, which exits without one, is given a cuInit that
# succeeds (an LD_PRELOAD shim, for that binary only; cuDriverGetVersion is the real driver's).
# It also compares the two packages' compiled Go functions instruction by instruction.
# cuarray's tooling, not upstream's. Offline: upstream comes from the Go module cache.
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-10}
here=$(pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
printf 'int cuInit(unsigned int flags) { (void)flags; return 0; }\n' >"$w/shim.c"
gcc -shared -fPIC -o "$w/shim.so" "$w/shim.c"
for v in up patched; do
	mkdir "$w/$v"
	printf 'module benchcu\n\ngo 1.26.8\n\nrequire gorgonia.org/cu v0.9.6\n' >"$w/$v/go.mod"
	init=""
	if [ $v = patched ]; then
		printf 'replace gorgonia.org/cu v0.9.6 => %s\n' "$here" >>"$w/$v/go.mod"
		init='if cu.Init(); cu.Version() <= 0 { b.Fatal("no driver") }'
	fi
	cp ../../go.sum "$w/$v/"
	cat >"$w/$v/bench_test.go" <<GO
package benchcu

import (
	"testing"

	"gorgonia.org/cu"
)

func BenchmarkVersion(b *testing.B) {
	$init
	for b.Loop() {
		cu.Version()
	}
}
GO
	(cd "$w/$v" && GOFLAGS=-mod=mod GOPROXY=off go test -c -o "$w/$v.test" . &&
		GOFLAGS=-mod=mod GOPROXY=off go build -o "$w/$v.a" gorgonia.org/cu)
	go tool objdump "$w/$v.a" | awk '/^TEXT /{f=$2; next} f{n=split($0,a,"\t"); x=a[n]; gsub(/0x[0-9a-f]+/,"X",x); print f "\t" x}' >"$w/$v.asm"
done
echo "bench.sh: libcuda linked: upstream $(ldd "$w/up.test" | grep -c libcuda), this copy $(ldd "$w/patched.test" | grep -c libcuda)"
awk -F'\t' '{print $1}' "$w/up.asm" | sort -u >"$w/up.fns"
awk -F'\t' '{print $1}' "$w/patched.asm" | sort -u >"$w/patched.fns"
same=0; differ=""
for f in $(comm -12 "$w/up.fns" "$w/patched.fns"); do
	if cmp -s <(grep -F "$f	" "$w/up.asm") <(grep -F "$f	" "$w/patched.asm"); then same=$((same + 1)); else differ="$differ $f"; fi
done
echo "bench.sh: Go functions in both: $same identical instruction for instruction, differing:${differ:- none}"
echo "bench.sh: only upstream's: $(comm -23 "$w/up.fns" "$w/patched.fns" | tr '\n' ' ')"
echo "bench.sh: only this copy's: $(comm -13 "$w/up.fns" "$w/patched.fns" | tr '\n' ' ')"
for i in $(seq "$rounds"); do
	LD_PRELOAD="$w/shim.so" "$w/up.test" -test.run '^$' -test.bench Version -test.benchtime 1000000x | awk '/^Benchmark/{print "up", $3}'
	"$w/patched.test" -test.run '^$' -test.bench Version -test.benchtime 1000000x | awk '/^Benchmark/{print "patched", $3}'
done >"$w/runs"
python3 - "$w/runs" <<'PY'
import statistics, sys
d = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    d.setdefault(k, []).append(float(v))
for k in ("up", "patched"):
    print("bench.sh: %-7s cuDriverGetVersion: median %.1f ns/op, best %.1f (%d rounds of 1e6 calls)" % (k, statistics.median(d[k]), min(d[k]), len(d[k])))
print("bench.sh: this copy / upstream: median %.3f, best %.3f" % (statistics.median(d["patched"]) / statistics.median(d["up"]), min(d["patched"]) / min(d["up"])))
PY
