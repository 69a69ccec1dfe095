#!/usr/bin/env bash
# mpi-check.sh runs the distributed FBP (make mpi-run) on each of the rank
# counts given (default 1 2 3) and checks rank 0's JSON summary: as many
# ledger entries as ranks, the volume equal to the one-process run's bit
# for bit, and the ledger's checks (bytes add up; host↔device only input and
# output beside the reslice's staging). Then a run whose last rank's device
# faults part-way must end non-zero within 30 s with one line. make mpi-check.
# Each run writes into a directory of its own and each mpirun has its own
# session directory (scripts/mpirun.sh), so two checks may run at once.
set -euo pipefail
MAKE=${MAKE:-make}
nps=${*:-1 2 3}
out=$(mktemp -d "${TMPDIR:-/tmp}/mpi-check.XXXXXX")
trap 'rm -rf "$out"' EXIT
for np in $nps; do
  line=$($MAKE --no-print-directory -s mpi-run NP="$np" MPI_DIR="$out/np$np" | tail -1)
  NP="$np" /usr/bin/python3 - "$line" <<'PY'
import json, os, sys
s = json.loads(sys.argv[1])
np = int(os.environ["NP"])
bad = []
if s["ranks"] != np: bad.append("ranks %s" % s["ranks"])
if len(s["ledger"]["ranks"]) != np: bad.append("%d ledger entries" % len(s["ledger"]["ranks"]))
if s["same_as_one_process"] is not True: bad.append("the volume differs from the one-process run's in %d values" % s["differing_values"])
for k, v in s["checks"].items():
    if v is not True: bad.append("check %s failed" % k)
if bad:
    sys.exit("mpi-check: NP=%d: %s" % (np, "; ".join(bad)))
print("mpi-check: NP=%d: same as one process, ledger adds up (%d ranks, %s, %.3f s)" % (np, s["ranks"], s["mpi_path"], s["seconds"]))
PY
done
np=3
start=$(date +%s%N)
if err=$($MAKE --no-print-directory -s mpi-run NP=$np MPI_DIR="$out/fault" MPI_FAULT_RANK=$((np - 1)) 2>&1 >/dev/null); then
  echo "mpi-check: a faulting rank did not end the job non-zero" >&2; exit 1
fi
took=$(( ($(date +%s%N) - start) / 1000000 ))
lines=$(printf '%s\n' "$err" | grep -c '^fbpmpi: ' || true)
if [ "$lines" != 1 ] || [ "$took" -gt 30000 ]; then
  echo "mpi-check: the faulting job took ${took} ms and said $lines lines:" >&2; printf '%s\n' "$err" >&2; exit 1
fi
echo "mpi-check: rank $((np - 1))'s fault ended the job non-zero in ${took} ms: $(printf '%s\n' "$err" | grep '^fbpmpi: ' | cut -c1-120)..."
