#!/usr/bin/env bash
# mpi-deps.sh installs Open MPI (mpirun, mpicc, mpi.h, libmpi), pkg-config (cgo
# finds Open MPI through its ompi-c.pc) and mpi4py from Debian, which the `mpi`
# build (package mpi, examples/fbpmpi), make mpi-run and make mpi-test need.
# Idempotent: a machine that has all of them is left alone.
set -euo pipefail

have() {
  command -v mpirun >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1 &&
    pkg-config --exists ompi-c 2>/dev/null &&
    [ -n "$(mpicc -showme:incdirs 2>/dev/null)" ] &&
    /usr/bin/python3 -c "import mpi4py" >/dev/null 2>&1
}
if have; then
  echo "mpi-deps: already installed ($(mpirun --version 2>/dev/null | head -1), mpi4py $(/usr/bin/python3 -c 'import mpi4py; print(mpi4py.__version__)'))"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends openmpi-bin libopenmpi-dev pkg-config python3-mpi4py python3-numpy
have || { echo "mpi-deps: installed, but mpirun, mpicc or mpi4py still missing" >&2; exit 1; }
echo "mpi-deps: installed ($(mpirun --version 2>/dev/null | head -1))"
