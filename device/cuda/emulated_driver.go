//go:build cuda && cudaemu && linux

package cuda

// A build with the tag cudaemu runs this backend on the emulated CUDA
// driver (package emulated) instead of libcuda.so.1: the backend itself is
// unchanged.
import _ "github.com/cuarray/cuarray/device/cuda/emulated"
