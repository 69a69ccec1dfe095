#!/usr/bin/env bash
# install_check.sh installs the Python module as a user would, offline, into
# a fresh venv (pip builds the wheel with Debian's setuptools; setup.py
# compiles libcuarray with Go and the wheel carries it), then, from another
# directory and with no CUARRAY_LIB, imports it, runs python -m cuarray
# info and the NumPy tests (test_cuarray.py) against the installed package.
# CI runs it; by hand: bash python/install_check.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-/usr/bin/python3}"
export PATH="/usr/local/go/bin:$PATH"
unset CUARRAY_LIB

if ! "$PY" -c "import ensurepip, setuptools, wheel, numpy" >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends python3-venv python3-setuptools python3-wheel python3-pip python3-numpy
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PY" -m venv --system-site-packages "$WORK/V"
"$WORK/V/bin/pip" install --no-build-isolation --no-index "$ROOT/python"

mkdir "$WORK/elsewhere"
cp "$ROOT/python/test_cuarray.py" "$ROOT/python/test_plan.py" "$WORK/elsewhere/"
cd "$WORK/elsewhere"
where="$("$WORK/V/bin/python" -c "import cuarray; print(cuarray.__file__)")"
case "$where" in
  "$WORK/V/"*) echo "install_check: cuarray imported from $where" ;;
  *) echo "install_check: cuarray imported from $where, not from the venv" >&2; exit 1 ;;
esac
shape="$("$WORK/V/bin/python" -c "import cuarray; print(cuarray.zeros((2,3)).shape)")"
[ "$shape" = "(2, 3)" ] || { echo "install_check: cuarray.zeros((2,3)).shape is $shape" >&2; exit 1; }
"$WORK/V/bin/python" -m cuarray info
"$WORK/V/bin/python" -m cuarray info -json >/dev/null
seed="$("$WORK/V/bin/python" -c "import numpy as np, cuarray.plan; print(cuarray.plan.calc_max_slices('identity', 0, (10, 20), np.float32(), 14450, raw=True)[0])")"
[ "$seed" = "9" ] || { echo "install_check: cuarray.plan.calc_max_slices of httomo's example is $seed, not 9" >&2; exit 1; }
# Every submodule setup.py copies in (MODULES) imports from the installed package.
"$WORK/V/bin/python" -c "import cuarray, cuarray.plan, cuarray.testing, cuarray.pool, cuarray.cuarray_alloc; cuarray.testing.check_max_slices; cuarray.pool.receive_pool; cuarray.cupy_allocator"
timeout 300 "$WORK/V/bin/python" -m unittest -v test_cuarray test_plan
echo "install_check: ok"
