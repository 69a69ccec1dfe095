#!/usr/bin/env bash
# python-deps.sh installs Debian's NumPy for /usr/bin/python3, which the
# Python module's tests (go test ./python) need. Idempotent.
set -euo pipefail

if /usr/bin/python3 -c "import numpy" >/dev/null 2>&1; then
  echo "python-deps: already installed (numpy $(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)'))"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends python3 python3-numpy
/usr/bin/python3 -c "import numpy; print('python-deps: numpy', numpy.__version__)"
