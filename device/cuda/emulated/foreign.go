//go:build cuda && cudaemu && linux

package emulated

// Another library in the process (CuPy, PyTorch, the CUDA runtime) calls
// libcuda.so.1 straight, not through gorgonia.org/cu's stubs, which answer
// CUDA_ERROR_NOT_INITIALIZED until cu.Init has run in cuarray. The Foreign
// functions are those straight calls into the emulated driver: tests use
// them to play such a library, for example one that has a context current
// on a thread before cuarray has started the driver.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import "unsafe"

// ForeignInit is cuInit(0) called by another library. It returns the CUresult.
func ForeignInit() int { return int(cuemu_cuInit(0)) }

// ForeignPrimaryRetain is cuDevicePrimaryCtxRetain called by another
// library: the primary context of device ordinal dev, and the CUresult.
func ForeignPrimaryRetain(dev int) (uintptr, int) {
	var c C.CUcontext
	r := cuemu_cuDevicePrimaryCtxRetain(&c, C.CUdevice(dev))
	return uintptr(unsafe.Pointer(c)), int(r)
}

// ForeignPrimaryRelease is cuDevicePrimaryCtxRelease called by another library.
func ForeignPrimaryRelease(dev int) int {
	return int(cuemu_cuDevicePrimaryCtxRelease_v2(C.CUdevice(dev)))
}

// ForeignCtxSetCurrent is cuCtxSetCurrent called by another library on
// the calling OS thread.
func ForeignCtxSetCurrent(ctx uintptr) int {
	return int(cuemu_cuCtxSetCurrent(C.CUcontext(cPointer(ctx))))
}

// ForeignCtxGetCurrent is cuCtxGetCurrent called by another library on
// the calling OS thread: the context current there (0 for none), and the
// CUresult.
func ForeignCtxGetCurrent() (uintptr, int) {
	var c C.CUcontext
	r := cuemu_cuCtxGetCurrent(&c)
	return uintptr(unsafe.Pointer(c)), int(r)
}
