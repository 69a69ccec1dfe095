//go:build cuda && cudaemu && linux

package emulated

/*
#include <stdlib.h>
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// The rules for copies with pageable host memory, from the Driver API's
// "API synchronization behavior" page, which the H100 followed (driver
// 580.159.04, 2026-11-27: conformance TestAPISynchronization, and the
// hangs of interop's TestImportCAIOnConsumerStream and kernels'
// TestAsyncKernelsReturnBeforeTheWorkIsDone):
//
//   - "For transfers from pageable host memory to device memory, a stream
//     sync is performed before the copy is initiated. The function will
//     return once the pageable buffer has been copied to the staging
//     memory for DMA transfer to device memory": cuMemcpyHtoD synchronizes
//     its stream (the legacy stream, so every blocking stream's work
//     queued before it too), stages the source, and returns.
//   - Async: "For transfers from pageable host memory to device memory,
//     host memory is copied to a staging buffer immediately (no device
//     synchronization is performed)" but the call "may be synchronous":
//     the strict reading, taken here, waits for the stream's earlier work
//     before staging.
//   - "For transfers from device memory to pageable host memory, the
//     function will return only once the copy has completed", Async or
//     not, 2-D and 3-D too.
//
// And a pageable copy waits while a host function of its context runs
// (hostfn.go). The option pageable=early keeps the old reading (pageable
// HtoD returns once staged without waiting, an async DtoH into pageable
// memory returns at once and writes it when the copy runs), to compare.

// hostSide classifies the host memory [p, p+n) of a copy: page-locked when
// one page-locked range holds all of it, pageable when it shares no byte
// with any, and CUDA_ERROR_INVALID_VALUE in between, as every cuMemcpy
// reference page says: "Memory regions requested must be either entirely
// registered with CUDA, or in the case of host pageable transfers, not
// registered at all. Memory regions spanning over allocations that are
// both registered and not registered with CUDA are not supported and will
// return CUDA_ERROR_INVALID_VALUE."
func hostSide(p uintptr, n int64) (pinned bool, r cuResult) {
	if hostAt(p, n) != nil {
		return true, success
	}
	if hostOverlapping(p, max(n, 1)) != nil {
		return false, errInvalidValue
	}
	return false, success
}

// syncForPageable is what a copy from pageable memory to the device does
// before staging: it waits for the context's running host function and
// synchronizes the stream (the legacy stream after the blocking streams'
// work queued so far).
func (s *stream) syncForPageable() cuResult {
	s.ctx.waitHostFuncs()
	if !drv.cfg.pageableWaits {
		return success
	}
	if r := s.run(func(driver.Stream) error { return nil }); r != success {
		return r
	}
	return s.wait()
}

// copyToPageable queues a copy of n bytes of device memory at src to
// pageable host memory at dst, as pageable=early has it: into C memory of the driver's, then, on the
// stream, from there to dst, whose address the driver keeps in C memory.
func (s *stream) copyToPageable(dst unsafe.Pointer, src uintptr, n uint64) cuResult {
	buf := C.malloc(C.size_t(n))
	slot := (*unsafe.Pointer)(C.malloc(C.size_t(unsafe.Sizeof(dst))))
	if buf == nil || slot == nil {
		C.free(buf)
		C.free(unsafe.Pointer(slot))
		return errOutOfMemory
	}
	*slot = dst
	queued := false
	r := s.run(func(st driver.Stream) error {
		if err := st.CopyDtoHAsync(hostBytes(buf, int64(n)), devarray.Ptr(src)); err != nil {
			return err
		}
		if err := sim.HostFunc(st, func() {
			copy(hostBytes(*slot, int64(n)), hostBytes(buf, int64(n)))
			C.free(buf)
			C.free(unsafe.Pointer(slot))
		}); err != nil {
			return err
		}
		queued = true
		return nil
	})
	if !queued {
		C.free(buf)
		C.free(unsafe.Pointer(slot))
	}
	return r
}
