package main

/*
#include "../interop/dlpack.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
)

// Every import is checked against the allocation it claims, so that a
// descriptor claiming more memory than it has (1 GiB over 64 bytes, a
// stride past the end, a freed allocation, an address nothing is mapped
// at) is refused, never read or written past:
//
//   - on a device that knows its allocations (sim; cuda through
//     cuPointerGetAttributes), the array must lie in the one live
//     allocation that holds its first byte;
//   - host memory imported with no device (NumPy's __array_interface__, a
//     CPU DLPack tensor) must lie in memory the process has mapped,
//     readable, and writable unless the import is read-only: the run of
//     mappings around its first byte (hostAllocation), the most the
//     library can know of another library's host memory.
//
// A device that cannot tell is trusted.

// allocationFinder is a device that knows the allocation holding an
// address (sim, and cuda through cuPointerGetAttributes).
type allocationFinder interface {
	Allocation(p devarray.Ptr) (base devarray.Ptr, size int64, ok bool)
}

// allocationOf returns the allocation of d (host memory when d is nil)
// that holds address p; known is false when d cannot tell, and cached
// true when the answer for host memory came from the mappings read
// before (hostAllocation): if the import does not fit, ask again fresh.
func allocationOf(d device.Device, p devarray.Ptr, write, fresh bool) (base devarray.Ptr, size int64, known, ok, cached bool) {
	if d == nil {
		b, n, known, ok, cached := hostAllocation(uintptr(p), write, fresh)
		return devarray.Ptr(b), n, known, ok, cached
	}
	f, known := d.(allocationFinder)
	if !known {
		return 0, 0, false, false, false
	}
	base, size, ok = f.Allocation(p)
	return base, size, true, ok, false
}

// where names the memory an import must lie in, for error messages.
func where(d device.Device, write bool) string {
	switch {
	case d != nil:
		return fmt.Sprintf("one live allocation of %v", d.DeviceID())
	case write:
		return "host memory this process has mapped readable and writable"
	default:
		return "host memory this process has mapped readable"
	}
}

// insideAllocation checks that every byte an imported array reaches lies
// in the allocation of d (host memory when d is nil) that holds its first
// byte.
func insideAllocation(d device.Device, a *devarray.DevArray, what string) error {
	if a.Size() == 0 {
		return nil
	}
	lo, hi := a.Extent()
	first := a.Ptr() + devarray.Ptr(lo)
	write := !a.ReadOnly()
	for fresh := false; ; fresh = true {
		base, size, known, ok, cached := allocationOf(d, first, write, fresh)
		switch {
		case !known:
			return nil
		case ok && first >= base && hi-lo <= size-int64(first-base):
			return nil
		case !cached:
			return fmt.Errorf("%s: %d bytes from %#x are not inside %s: %w",
				what, hi-lo, uint64(first), where(d, write), devarray.ErrBounds)
		}
	}
}

// dlpackBounds returns the option that bounds the import of DLPack tensor
// t to the allocation holding its element 0 (data + byte_offset; every
// byte a non-empty tensor reaches lies in that allocation), nil when none
// is known, whether the tensor is writable, and whether the bounds came
// from host mappings read before (on a refusal, try again fresh). The
// importer refuses a tensor reaching outside the bounds before it takes
// the tensor, so its deleter is not called and the caller still owns it.
func dlpackBounds(d device.Device, t unsafe.Pointer, versioned, fresh bool) (bounds devarray.WrapOption, write, cached bool) {
	var dl *C.DLTensor
	write = true
	if versioned {
		v := (*C.DLManagedTensorVersioned)(t)
		dl, write = &v.dl_tensor, uint64(v.flags)&1 == 0
	} else {
		dl = &(*C.DLManagedTensor)(t).dl_tensor
	}
	first := devarray.Ptr(uint64(uintptr(dl.data)) + uint64(dl.byte_offset))
	base, size, known, ok, cached := allocationOf(d, first, write, fresh)
	switch {
	case !known:
		return nil, write, false
	case !ok:
		return devarray.WithBounds(first, 0), write, cached // an empty tensor imports, no other
	}
	return devarray.WithBounds(base, size), write, cached
}
