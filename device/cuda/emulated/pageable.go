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

// copyToPageable queues a copy of n bytes of device memory at src to
// pageable host memory at dst: into C memory of the driver's, then, on the
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
