#!/usr/bin/env bash
# gpu-run.sh is copied into .gpu/run.sh by `make gpu-bundle`. On the GPU
# machine, from the repository root: bash .gpu/run.sh
# It runs every package's tests with -tags cuda on cuda:0, `cuarray info`,
# the backend's smoke benchmarks and PyTorch's peer figure, writes full logs
# under $OUT (or .gpu/out) and prints a short table last.
set -u
G="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(pwd)"
OUT="${OUT:-$G/out}"
mkdir -p "$OUT/logs"
. "$G/unpack.sh"
export CUARRAY_LIB="$G/libcuarray.so"  # python.test uses it instead of building the library (no Go there)
: > "$OUT/results"

{
	echo "date    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit  $(cat "$G/commit")"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu     /'
} > "$OUT/env.txt"
nvidia-smi > "$OUT/logs/nvidia-smi.txt" 2>&1

"$G/cuarray" info -device cuda:0 > "$OUT/logs/info.txt" 2>&1
echo "cuarray-info $?" >> "$OUT/results"

while read -r name rel; do
	start=$(date +%s)
	(cd "$ROOT/$rel" && "$G/tests/$name.test" -test.count=1 -test.v -test.timeout=300s) > "$OUT/logs/$name.log" 2>&1
	rc=$?
	pass=$(grep -c -- '^--- PASS' "$OUT/logs/$name.log")
	fail=$(grep -c -- '^--- FAIL' "$OUT/logs/$name.log")
	skip=$(grep -c -- '^--- SKIP' "$OUT/logs/$name.log")
	echo "$name $rc pass=$pass fail=$fail skip=$skip $(( $(date +%s) - start ))s" >> "$OUT/results"
done < "$G/tests/index"

(cd "$ROOT/device/cuda" && "$G/tests/device_cuda.test" -test.run '^$' -test.bench . -test.benchtime=2s -test.count=5) \
	> "$OUT/logs/bench-cuda.log" 2>&1
echo "bench-cuda $?" >> "$OUT/results"
(cd "$ROOT/pool" && "$G/tests/pool.test" -test.run '^$' -test.bench AllocFree -test.benchtime=20000x -test.count=5) \
	> "$OUT/logs/bench-pool.log" 2>&1
echo "bench-pool $?" >> "$OUT/results"
python3 "$G/peers/torch_d2d.py" > "$OUT/logs/peer-torch-d2d.json" 2> "$OUT/logs/peer-torch-d2d.err"
echo "peer-torch-d2d $?" >> "$OUT/results"
# The transfer paths, then PyTorch's copies of the same sizes right after.
"$G/cuarray" bench -device cuda:0 -json -svg "$OUT/bench.svg" > "$OUT/bench.json" 2> "$OUT/logs/bench.err"
echo "cuarray-bench $?" >> "$OUT/results"
python3 "$G/peers/torch_transfer.py" > "$OUT/logs/peer-torch-transfer.json" 2> "$OUT/logs/peer-torch-transfer.err"
echo "peer-torch-transfer $?" >> "$OUT/results"

# The Python module: NumPy on sim (NumPy 2 here), then CuPy and PyTorch on cuda:0.
CUARRAY_LIB="$G/libcuarray.so" python3 -m unittest -v python/test_cuarray.py > "$OUT/logs/python-numpy.log" 2>&1
echo "python-numpy $? $(tail -1 "$OUT/logs/python-numpy.log")" >> "$OUT/results"
CUARRAY_LIB="$G/libcuarray.so" python3 -m unittest -v python/test_gpu.py > "$OUT/logs/python-gpu.log" 2>&1
echo "python-gpu $? $(tail -1 "$OUT/logs/python-gpu.log")" >> "$OUT/results"

echo "== environment"; cat "$OUT/env.txt"
echo "== results (name exit-code tests time)"; cat "$OUT/results"
echo "== benchmarks"; grep -hE '^Benchmark' "$OUT/logs/bench-cuda.log" "$OUT/logs/bench-pool.log"
echo "== peer"; cat "$OUT/logs/peer-torch-d2d.json" "$OUT/logs/peer-torch-transfer.json"
echo "== cuarray bench"; cat "$OUT/logs/bench.err"
