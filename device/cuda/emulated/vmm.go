//go:build cuda && cudaemu && linux

package emulated

// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess, their inverses and cuMemGetAllocationGranularity) on
// sim's virtual memory (device/sim/vmm.go and vmm_rules.go, which quote the
// rules they keep). A CUmemGenericAllocationHandle is a handle of the
// driver naming physical memory of one sim device; an address range is
// reserved on the current context's device. Pinned device memory only:
// other allocation types, host locations, shareable handle types and
// read-only access answer CUDA_ERROR_NOT_SUPPORTED.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// physicalMem is a CUmemGenericAllocationHandle.
type physicalMem struct {
	ctx *context
	dev *sim.Device
	h   driver.PhysicalHandle
}

// vmmProp checks an allocation's properties and returns the primary
// context and sim device of the device they name.
func vmmProp(prop *C.CUmemAllocationProp) (*context, *sim.Device, cuResult) {
	if prop == nil || prop._type != C.CU_MEM_ALLOCATION_TYPE_PINNED || prop.location._type != C.CU_MEM_LOCATION_TYPE_DEVICE {
		return nil, nil, errInvalidValue
	}
	if prop.requestedHandleTypes != C.CU_MEM_HANDLE_TYPE_NONE {
		return nil, nil, errNotSupported // shareable handles are not emulated
	}
	return primaryOf(int(prop.location.id))
}

//export cuemu_cuMemGetAllocationGranularity
func cuemu_cuMemGetAllocationGranularity(g *C.size_t, prop *C.CUmemAllocationProp, option C.CUmemAllocationGranularity_flags) C.CUresult {
	if g == nil || (option != C.CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != C.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
		return result("cuMemGetAllocationGranularity", errInvalidValue)
	}
	c, sd, r := vmmProp(prop)
	if r != success {
		return result("cuMemGetAllocationGranularity", r)
	}
	gr, err := sd.MemGranularity()
	if err != nil {
		return result("cuMemGetAllocationGranularity", c.codeOf(err))
	}
	*g = C.size_t(gr.Minimum)
	if option == C.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED {
		*g = C.size_t(gr.Recommended)
	}
	return result("cuMemGetAllocationGranularity", success)
}

// cuMemAddressReserve: the address hint is taken as a hint ("when it is
// non-zero then the driver treats it as a hint about where to place the
// reservation") and not followed; "flags - Currently unused, must be
// zero".
//
//export cuemu_cuMemAddressReserve
func cuemu_cuMemAddressReserve(p *C.CUdeviceptr, size, alignment C.size_t, addr C.CUdeviceptr, flags C.ulonglong) C.CUresult {
	if p == nil || flags != 0 || uint64(size) > 1<<62 || uint64(alignment) > 1<<62 {
		return result("cuMemAddressReserve", errInvalidValue)
	}
	c, sd, r := current()
	if r != success {
		return result("cuMemAddressReserve", r)
	}
	a, err := sd.ReserveAddress(int64(size), int64(alignment))
	if err != nil {
		return result("cuMemAddressReserve", c.codeOf(err))
	}
	*p = C.CUdeviceptr(a)
	return result("cuMemAddressReserve", success)
}

//export cuemu_cuMemAddressFree
func cuemu_cuMemAddressFree(p C.CUdeviceptr, size C.size_t) C.CUresult {
	c, sd, r := current()
	if r != success {
		return result("cuMemAddressFree", r)
	}
	return result("cuMemAddressFree", c.codeOf(sd.FreeAddress(devarray.Ptr(p), int64(min(uint64(size), 1<<62)))))
}

//export cuemu_cuMemCreate
func cuemu_cuMemCreate(h *C.CUmemGenericAllocationHandle, size C.size_t, prop *C.CUmemAllocationProp, flags C.ulonglong) C.CUresult {
	if h == nil || flags != 0 || uint64(size) > 1<<62 {
		return result("cuMemCreate", errInvalidValue)
	}
	c, sd, r := vmmProp(prop)
	if r != success {
		return result("cuMemCreate", r)
	}
	ph, err := sd.CreatePhysical(int64(size))
	if err != nil {
		return result("cuMemCreate", c.codeOf(err))
	}
	*h = C.CUmemGenericAllocationHandle(drv.newHandle(&physicalMem{ctx: c, dev: sd, h: ph}))
	return result("cuMemCreate", success)
}

// physicalOf returns the physical memory of handle h, its context usable.
func physicalOf(h C.CUmemGenericAllocationHandle) (*physicalMem, cuResult) {
	if !drv.ready() {
		return nil, errNotInitialized
	}
	m, ok := lookup[*physicalMem](uintptr(h))
	if !ok {
		return nil, errInvalidValue
	}
	if r := m.ctx.usable(); r != success {
		return nil, r
	}
	return m, success
}

// cuMemRelease: "If handle is not a valid handle the behavior is
// undefined." The emulated driver answers CUDA_ERROR_INVALID_VALUE.
//
//export cuemu_cuMemRelease
func cuemu_cuMemRelease(h C.CUmemGenericAllocationHandle) C.CUresult {
	m, r := physicalOf(h)
	if r != success {
		return result("cuMemRelease", r)
	}
	if err := m.dev.ReleasePhysical(m.h); err != nil {
		return result("cuMemRelease", m.ctx.codeOf(err))
	}
	drv.forget(uintptr(h))
	return result("cuMemRelease", success)
}

//export cuemu_cuMemMap
func cuemu_cuMemMap(p C.CUdeviceptr, size, offset C.size_t, h C.CUmemGenericAllocationHandle, flags C.ulonglong) C.CUresult {
	if flags != 0 || uint64(size) > 1<<62 || uint64(offset) > 1<<62 {
		return result("cuMemMap", errInvalidValue)
	}
	m, r := physicalOf(h)
	if r != success {
		return result("cuMemMap", r)
	}
	return result("cuMemMap", m.ctx.codeOf(m.dev.MapMemory(devarray.Ptr(p), int64(size), int64(offset), m.h)))
}

//export cuemu_cuMemUnmap
func cuemu_cuMemUnmap(p C.CUdeviceptr, size C.size_t) C.CUresult {
	c, sd, r := current()
	if r != success {
		return result("cuMemUnmap", r)
	}
	return result("cuMemUnmap", c.codeOf(sd.UnmapMemory(devarray.Ptr(p), int64(min(uint64(size), 1<<62)))))
}

// cuMemSetAccess: each descriptor names a device whose access is set;
// CU_MEM_ACCESS_FLAGS_PROT_READ (read-only) is not emulated.
//
//export cuemu_cuMemSetAccess
func cuemu_cuMemSetAccess(p C.CUdeviceptr, size C.size_t, desc *C.CUmemAccessDesc, count C.size_t) C.CUresult {
	if desc == nil || count == 0 || count > 64 {
		return result("cuMemSetAccess", errInvalidValue)
	}
	if _, _, r := current(); r != success {
		return result("cuMemSetAccess", r)
	}
	for _, a := range unsafe.Slice(desc, int(count)) {
		if a.location._type != C.CU_MEM_LOCATION_TYPE_DEVICE {
			return result("cuMemSetAccess", errInvalidValue)
		}
		var rw bool
		switch a.flags {
		case C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
			rw = true
		case C.CU_MEM_ACCESS_FLAGS_PROT_NONE:
		case C.CU_MEM_ACCESS_FLAGS_PROT_READ:
			return result("cuMemSetAccess", errNotSupported)
		default:
			return result("cuMemSetAccess", errInvalidValue)
		}
		c, sd, r := primaryOf(int(a.location.id))
		if r != success {
			return result("cuMemSetAccess", r)
		}
		if err := sd.SetAccess(devarray.Ptr(p), int64(min(uint64(size), 1<<62)), rw); err != nil {
			return result("cuMemSetAccess", c.codeOf(err))
		}
	}
	return result("cuMemSetAccess", success)
}
