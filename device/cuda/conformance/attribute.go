//go:build cuda

package conformance

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#cgo !linux LDFLAGS: -lcuda
#include <cuda.h>
*/
import "C"

// AttrCanUseHostPointerForRegisteredMem is
// CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM.
const AttrCanUseHostPointerForRegisteredMem = int(C.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)

// The attributes of pageable memory access: "Device supports coherently
// accessing pageable memory without calling cudaHostRegister on it" and
// "Device accesses pageable memory via the host's page tables" (cuda.h).
const (
	AttrPageableMemoryAccess           = int(C.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
	AttrPageableMemoryAccessHostTables = int(C.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
)

// The flags of cuMemHostAlloc and cuMemHostRegister the observations use.
const (
	HostAllocDeviceMap     = uint32(C.CU_MEMHOSTALLOC_DEVICEMAP)
	HostAllocWriteCombined = uint32(C.CU_MEMHOSTALLOC_WRITECOMBINED)
	HostRegisterDeviceMap  = uint32(C.CU_MEMHOSTREGISTER_DEVICEMAP)
)

// DeviceAttribute returns attribute attr of device dev (cuDeviceGetAttribute).
func DeviceAttribute(attr, dev int) (int, int) {
	var v C.int
	c := C.cuDeviceGetAttribute(&v, C.CUdevice_attribute(attr), C.CUdevice(dev))
	return int(v), r(c)
}
