# gpu-unpack.sh is copied into .gpu/unpack.sh by `make gpu-bundle`, and
# sourced by run.sh and bench.sh with G set to the bundle's directory:
# make gpu-bundle gzips the binaries to stay under the 64 MiB carry limit.
for f in "$G"/tests/*.test.gz "$G"/cuarray.gz "$G"/fbp.gz; do
	[ -e "$f" ] && gunzip -f "$f" && chmod +x "${f%.gz}"
done
[ -e "$G/libcuarray.so.gz" ] && gunzip -f "$G/libcuarray.so.gz"
true
