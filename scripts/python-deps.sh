#!/usr/bin/env bash
# python-deps.sh installs Debian's NumPy for /usr/bin/python3, which the
# Python module's tests (go test ./python) need, and any further Debian
# packages named as arguments (make bench-deps: python3-skimage).
# Idempotent: it installs only what /usr/bin/python3 cannot import yet.
set -euo pipefail

missing=()
/usr/bin/python3 -c "import numpy" >/dev/null 2>&1 || missing+=(python3 python3-numpy)
for pkg in "$@"; do
  mod=${pkg#python3-}
  /usr/bin/python3 -c "import $mod" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "python-deps: already installed (numpy $(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')${*:+, $*})"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
/usr/bin/python3 -c "import numpy; print('python-deps: numpy', numpy.__version__)"
