//go:build cuda && cudaemu && linux

package emulated

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
)

// Peek copies device memory at src into dst as it is now, in the current
// context of the calling thread, and returns the CUresult the driver
// gives. It is what the cuda backend's test observer (cuda.Device.Peek)
// does on a GPU through a non-blocking stream of its own that waits for
// no other work, without being device work: the stream race checker
// (check=streams) does not judge it, because a test that looks at memory
// while a held stream still has work queued on it reads that memory early
// on purpose, to show the work is not done yet.
//
// dst is host memory of a copy, as the GPU's cuMemcpyDtoHAsync takes it:
// page-locked, it is written at once; pageable, the call first waits
// until no host function of the context runs, as a copy into pageable
// memory does (hostfn.go: on the H100, driver 580.159.04, 2026-11-27, such
// a peek never returned while a host function held another stream); partly
// page-locked, it is CUDA_ERROR_INVALID_VALUE (pageable.go).
func Peek(dst []byte, src uintptr) int {
	c, dev, r := current()
	if r != success {
		return int(r)
	}
	n := int64(len(dst))
	if n == 0 {
		return int(success)
	}
	if !onDevice(dev, src, n) {
		return int(errInvalidValue)
	}
	pinned, r := hostSide(uintptr(unsafe.Pointer(unsafe.SliceData(dst))), n)
	if r != success {
		return int(r)
	}
	if !pinned {
		c.waitHostFuncs()
	}
	b, err := dev.Peek(devarray.Ptr(src), n)
	if err != nil {
		return int(c.codeOf(err))
	}
	copy(dst, b)
	return int(success)
}
