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
