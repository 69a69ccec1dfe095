//go:build cuda

package cuda

// Managed memory's driver calls (cuMemAllocManaged, cuMemAdvise,
// cuMemRangeGetAttributes, cuStreamAttachMemAsync, cuMemPrefetchAsync),
// bound here in one place: gorgonia.org/cu lacks cuMemRangeGetAttributes,
// and its others take its own types.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>

// cuarray_range_attributes reads a managed range's four attributes in one
// cuMemRangeGetAttributes: read-mostly, preferred location, last prefetch
// location, and n accessed-by devices.
static CUresult cuarray_range_attributes(CUdeviceptr p, size_t count, int *ints, int *accessed, size_t n) {
	void *data[4] = {&ints[0], &ints[1], &ints[2], accessed};
	size_t sizes[4] = {4, 4, 4, 4 * n};
	CUmem_range_attribute attrs[4] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
		CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY};
	return cuMemRangeGetAttributes(data, sizes, attrs, 4, p, count);
}
*/
import "C"

import "unsafe"

const (
	attrConcurrentManaged  = int(C.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
	attrPageableAccess     = int(C.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
	attrPageableHostTables = int(C.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
	deviceInvalid          = int32(C.CU_DEVICE_INVALID)
	maxAccessedByLocations = 65 // the host and 64 devices
)

func memAllocManaged(n int64, flags uint32) (uintptr, int) {
	var p C.CUdeviceptr
	r := C.cuMemAllocManaged(&p, C.size_t(n), C.uint(flags))
	return uintptr(p), code(r)
}

func memAdvise(p uintptr, n int64, advice int, dev int32) int {
	return code(C.cuMemAdvise(C.CUdeviceptr(p), C.size_t(n), C.CUmem_advise(advice), C.CUdevice(dev)))
}

// memRangeGetAttributes reads a managed range's read-mostly flag,
// preferred and last prefetch locations (ints) and accessed-by locations
// (len(accessed) of them).
func memRangeGetAttributes(p uintptr, n int64, ints *[3]int32, accessed []int32) int {
	r := C.cuarray_range_attributes(C.CUdeviceptr(p), C.size_t(n), (*C.int)(unsafe.Pointer(&ints[0])),
		(*C.int)(unsafe.Pointer(unsafe.SliceData(accessed))), C.size_t(len(accessed)))
	return code(r)
}

func streamAttachMemAsync(s C.CUstream, p uintptr, n int64, flags uint32) int {
	return code(C.cuStreamAttachMemAsync(s, C.CUdeviceptr(p), C.size_t(n), C.uint(flags)))
}

func memPrefetchAsync(p uintptr, n int64, dev int32, s C.CUstream) int {
	return code(C.cuMemPrefetchAsync(C.CUdeviceptr(p), C.size_t(n), C.CUdevice(dev), s))
}

func deviceGetAttribute(attr, ordinal int) (int, int) {
	var v C.int
	r := C.cuDeviceGetAttribute(&v, C.CUdevice_attribute(attr), C.CUdevice(ordinal))
	return int(v), code(r)
}
