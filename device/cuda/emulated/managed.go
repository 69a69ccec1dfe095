//go:build cuda && cudaemu && linux

package emulated

// Managed memory (cuMemAllocManaged, cuMemAdvise, cuMemRangeGetAttribute,
// cuMemRangeGetAttributes, cuStreamAttachMemAsync, cuMemPrefetchAsync) on
// sim's managed allocations (device/sim/managed.go, which quotes the rules
// it keeps and keeps each page's residency). The sentences quoted here are
// from cuda.h (CUDA 11.8). Every emulated device reports
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS 1, as an H100 or H200 on
// Linux does, or 0 with the option managed=exclusive, whose sim devices
// then hold the host's access to the rules of such a device.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// cuMemAllocManaged: "flags must be one of CU_MEM_ATTACH_GLOBAL or
// CU_MEM_ATTACH_HOST", "If bytesize is 0, cuMemAllocManaged returns
// CUDA_ERROR_INVALID_VALUE". It synchronizes as cuMemAlloc does here. It
// may be larger than the device's memory where the device has concurrent
// managed access (sim's oversubscription, managed_evict.go): "device
// memory oversubscription is possible for GPUs that have a non-zero value
// for the device attribute cudaDevAttrConcurrentManagedAccess" (CuPy's
// malloc_managed, after the Runtime API's cudaMallocManaged); elsewhere
// it is device memory, and sim answers out of memory.
//
//export cuemu_cuMemAllocManaged
func cuemu_cuMemAllocManaged(p *C.CUdeviceptr, n C.size_t, flags C.uint) C.CUresult {
	c, dev, r := current()
	if r == success && (p == nil || n == 0 || (flags != C.CU_MEM_ATTACH_GLOBAL && flags != C.CU_MEM_ATTACH_HOST)) {
		r = errInvalidValue
	}
	if r != success {
		return result("cuMemAllocManaged", r)
	}
	d, err := dev.MallocManaged(int64(n), devarray.Attach(flags))
	if err != nil {
		return result("cuMemAllocManaged", c.codeOf(err))
	}
	if r := c.implicitSync(); r != success {
		dev.Free(d)
		return result("cuMemAllocManaged", r)
	}
	*p = C.CUdeviceptr(d)
	return result("cuMemAllocManaged", success)
}

// location turns a CUdevice of the managed calls into a location:
// CU_DEVICE_CPU the host, an ordinal of the driver's devices that
// device; any other is CUDA_ERROR_INVALID_DEVICE.
func location(dev C.CUdevice) (driver.Location, cuResult) {
	if dev == C.CU_DEVICE_CPU {
		return driver.HostLocation, success
	}
	if _, r := deviceOf(int(dev)); r != success {
		return 0, errInvalidDevice
	}
	return driver.Location(dev), success
}

// cuMemAdvise: "The device argument is ignored for this advice"
// (CU_MEM_ADVISE_SET_READ_MOSTLY, and its unset); a device other than the
// current context's is CUDA_ERROR_INVALID_DEVICE (a guess: sim keeps the
// advice of its own device and the host only).
//
//export cuemu_cuMemAdvise
func cuemu_cuMemAdvise(p C.CUdeviceptr, n C.size_t, advice C.CUmem_advise, dev C.CUdevice) C.CUresult {
	c, sd, r := current()
	if r != success {
		return result("cuMemAdvise", r)
	}
	a := driver.Advice(advice)
	loc := driver.HostLocation
	if a != driver.AdviseReadMostly && a != driver.AdviseUnsetReadMostly {
		if loc, r = location(dev); r == success && loc != driver.HostLocation && int(loc) != c.dev.ordinal {
			r = errInvalidDevice
		}
		if r != success {
			return result("cuMemAdvise", r)
		}
	}
	return result("cuMemAdvise", c.codeOf(sd.Advise(devarray.Ptr(p), int64(n), a, loc)))
}

// rangeAttribute writes one attribute of a managed range's attributes
// into data, dataSize bytes, as cuMemRangeGetAttribute lays it out: "data
// will be interpreted as a 32-bit integer, and dataSize must be 4";
// accessed-by, "dataSize must be a non-zero multiple of 4", and "If data
// is larger than the number of devices that have that advice set for that
// memory range, CU_DEVICE_INVALID will be returned in all the extra space
// provided". The host is listed as CU_DEVICE_CPU.
func rangeAttribute(ra driver.RangeAttributes, attr C.CUmem_range_attribute, data unsafe.Pointer, size uintptr) cuResult {
	if data == nil || size == 0 || size%4 != 0 {
		return errInvalidValue
	}
	out := unsafe.Slice((*C.int)(data), size/4)
	if attr == C.CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY {
		for i := range out {
			out[i] = C.CU_DEVICE_INVALID
			if i < len(ra.AccessedBy) {
				out[i] = C.int(ra.AccessedBy[i])
			}
		}
		return success
	}
	if size != 4 {
		return errInvalidValue
	}
	switch attr {
	case C.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		out[0] = 0
		if ra.ReadMostly {
			out[0] = 1
		}
	case C.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
		out[0] = C.int(ra.PreferredLocation)
	case C.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		out[0] = C.int(ra.LastPrefetchLocation)
	default:
		return errInvalidValue
	}
	return success
}

// rangeAttributes reads the attributes of a managed range of the current
// context's device.
func rangeAttributes(p C.CUdeviceptr, n C.size_t) (driver.RangeAttributes, cuResult) {
	c, sd, r := current()
	if r != success {
		return driver.RangeAttributes{}, r
	}
	ra, err := sd.RangeAttributes(devarray.Ptr(p), int64(n))
	return ra, c.codeOf(err)
}

//export cuemu_cuMemRangeGetAttribute
func cuemu_cuMemRangeGetAttribute(data unsafe.Pointer, size C.size_t, attr C.CUmem_range_attribute, p C.CUdeviceptr, n C.size_t) C.CUresult {
	ra, r := rangeAttributes(p, n)
	if r == success {
		r = rangeAttribute(ra, attr, data, uintptr(size))
	}
	return result("cuMemRangeGetAttribute", r)
}

// cuMemRangeGetAttributes: "The attributes array will be interpreted to
// have numAttributes entries. The dataSizes array will also be interpreted
// to have numAttributes entries."
//
//export cuemu_cuMemRangeGetAttributes
func cuemu_cuMemRangeGetAttributes(data *unsafe.Pointer, sizes *C.size_t, attrs *C.CUmem_range_attribute, num C.size_t, p C.CUdeviceptr, n C.size_t) C.CUresult {
	if data == nil || sizes == nil || attrs == nil || num == 0 || num > 64 {
		return result("cuMemRangeGetAttributes", errInvalidValue)
	}
	ra, r := rangeAttributes(p, n)
	ds, ss, as := unsafe.Slice(data, int(num)), unsafe.Slice(sizes, int(num)), unsafe.Slice(attrs, int(num))
	for i := 0; r == success && i < int(num); i++ {
		r = rangeAttribute(ra, as[i], ds[i], uintptr(ss[i]))
	}
	return result("cuMemRangeGetAttributes", r)
}

// cuStreamAttachMemAsync: "It is illegal to attach singly to the NULL
// stream, because the NULL stream is a virtual global stream and not a
// specific stream. An error will be returned in this case."
//
//export cuemu_cuStreamAttachMemAsync
func cuemu_cuStreamAttachMemAsync(s C.CUstream, p C.CUdeviceptr, n C.size_t, flags C.uint) C.CUresult {
	_, _, st, r := currentStream(sh(s))
	if r == success && flags == C.CU_MEM_ATTACH_SINGLE && st.legacy {
		r = errInvalidValue
	}
	if r != success {
		return result("cuStreamAttachMemAsync", r)
	}
	return result("cuStreamAttachMemAsync", st.run(func(x driver.Stream) error {
		return x.AttachMem(devarray.Ptr(p), int64(n), devarray.Attach(flags))
	}))
}

// cuMemPrefetchAsync: "Passing in CU_DEVICE_CPU for dstDevice will
// prefetch the data to host memory"; a device other than the stream's is
// CUDA_ERROR_INVALID_DEVICE (a guess: sim keeps the pages of its own
// device and the host only).
//
//export cuemu_cuMemPrefetchAsync
func cuemu_cuMemPrefetchAsync(p C.CUdeviceptr, n C.size_t, dev C.CUdevice, s C.CUstream) C.CUresult {
	c, _, st, r := currentStream(sh(s))
	var loc driver.Location
	if r == success {
		loc, r = location(dev)
	}
	if r == success && loc != driver.HostLocation && int(loc) != c.dev.ordinal {
		r = errInvalidDevice
	}
	if r != success {
		return result("cuMemPrefetchAsync", r)
	}
	return result("cuMemPrefetchAsync", st.run(func(x driver.Stream) error {
		return x.Prefetch(devarray.Ptr(p), int64(n), loc)
	}))
}

// isManaged is CU_POINTER_ATTRIBUTE_IS_MANAGED of a pointer: 1 in a
// managed allocation.
func isManaged(info pointerInfo) int {
	if info.ctx == nil || info.memType != memTypeDevice {
		return 0
	}
	if dev := info.ctx.active(); dev != nil && dev.IsManaged(devarray.Ptr(info.devPtr)) {
		return 1
	}
	return 0
}

// ReportManaged makes l the ledger that counts the page faults, read
// duplicates and migrations of the managed memory of the calling thread's
// current context's device (sim.Device.SetManagedLedger): the cuda
// backend hands its own, as CUPTI's counters would reach it on a GPU.
func ReportManaged(l *accounting.Ledger) {
	if _, dev, r := current(); r == success {
		dev.SetManagedLedger(l)
	}
}

// HostTouch holds a host access to the managed bytes [p, p+n) of the
// calling thread's current context's device to sim's rules and moves
// their pages to the host (sim.Device.HostAccess); its error wraps
// driver.ErrManagedBusy where the device owns the memory now.
func HostTouch(p devarray.Ptr, n int64, write bool) error {
	_, dev, r := current()
	if r != success {
		return fmt.Errorf("emulated: host access to managed memory: %s: %w", r.name(), driver.ErrInvalidValue)
	}
	_, err := dev.HostAccess(p, n, write)
	return err
}

// attrConcurrentManagedAccess is CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS.
const attrConcurrentManagedAccess = int(C.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
