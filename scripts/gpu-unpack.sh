# shellcheck shell=bash
# gpu-unpack.sh is copied into .gpu/unpack.sh by `make gpu-bundle`, and
# sourced by run.sh and bench.sh with G set to the bundle's directory:
# make gpu-bundle packs the test binaries, cuarray, fbp and libcuarray.so
# into one solid xz archive, bins.tar.xz, to stay well under the carry
# limit. It unpacks when the archive is newer than what it unpacked last
# (tar -m dates the files now), so a second source costs nothing.
if [ -e "$G/bins.tar.xz" ] && { [ ! -e "$G/cuarray" ] || [ "$G/bins.tar.xz" -nt "$G/cuarray" ]; }; then
	tar -xJmf "$G/bins.tar.xz" -C "$G" || echo "unpack.sh: cannot unpack $G/bins.tar.xz" >&2
fi
true
