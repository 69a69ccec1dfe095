//go:build cuda

package conformance

// Managed memory's driver calls, bound for the conformance rows
// (observe_managed_test.go); every wrapper returns the CUresult as an int.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import "unsafe"

// The managed memory flags and locations (CUmemAttach_flags, CUdevice).
const (
	AttachGlobal = uint32(C.CU_MEM_ATTACH_GLOBAL)
	AttachHost   = uint32(C.CU_MEM_ATTACH_HOST)
	AttachSingle = uint32(C.CU_MEM_ATTACH_SINGLE)
	DeviceCPU    = int(C.CU_DEVICE_CPU)
)

func MemAllocManaged(n int, flags uint32) (uintptr, int) {
	var p C.CUdeviceptr
	c := C.cuMemAllocManaged(&p, C.size_t(n), C.uint(flags))
	return uintptr(p), r(c)
}

func MemPrefetchAsync(p uintptr, n int, dev int, s uintptr) int {
	return r(C.cuMemPrefetchAsync(C.CUdeviceptr(p), C.size_t(n), C.CUdevice(dev), stream(s)))
}

func StreamAttachMemAsync(s, p uintptr, n int, flags uint32) int {
	return r(C.cuStreamAttachMemAsync(stream(s), C.CUdeviceptr(p), C.size_t(n), C.uint(flags)))
}

// LastPrefetchLocation is cuMemRangeGetAttribute's
// CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION of [p, p+n).
func LastPrefetchLocation(p uintptr, n int) (int, int) {
	var v C.int
	c := C.cuMemRangeGetAttribute(unsafe.Pointer(&v), 4, C.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, C.CUdeviceptr(p), C.size_t(n))
	return int(v), r(c)
}

// ConcurrentManagedAccess is device 0's CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS.
func ConcurrentManagedAccess() (bool, int) {
	var v C.int
	c := C.cuDeviceGetAttribute(&v, C.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0)
	return v != 0, r(c)
}

// ManagedBytes is managed memory at p as host memory: its pointer "is
// valid on the CPU" (cuMemAllocManaged).
func ManagedBytes(p uintptr, n int) []byte { return unsafe.Slice((*byte)(ptr(p)), n) }
