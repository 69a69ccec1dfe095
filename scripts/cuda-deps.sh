#!/usr/bin/env bash
# cuda-deps.sh installs the CUDA headers (cuda.h), libcuda.so and nvcc from
# Debian's non-free component, which the `cuda` build and `make ptx` need.
# It adds a sources entry with the same mirror and keyring as the existing
# Debian entry. It is idempotent: a machine that has nvcc and cuda.h is left alone.
set -euo pipefail

if command -v nvcc >/dev/null 2>&1 && [ -f /usr/include/cuda.h ] && \
   ls /usr/lib/x86_64-linux-gnu/libcuda.so* >/dev/null 2>&1; then
  echo "cuda-deps: already installed ($(nvcc --version | tail -1))"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

src=/etc/apt/sources.list.d/debian-nonfree.sources
if [ ! -f "$src" ]; then
  $SUDO tee "$src" >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends nvidia-cuda-dev libcuda1 nvidia-cuda-toolkit
echo "cuda-deps: installed ($(nvcc --version | tail -1))"
