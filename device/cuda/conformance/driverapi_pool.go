//go:build cuda

package conformance

// The bindings of the stream-ordered allocator's calls the pool rows make
// (observe_pools_test.go) beyond those driverapi_pool_ipc.go binds: the
// default pool, cuMemAllocAsync, the pool attributes and cuMemPoolTrimTo.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import "unsafe"

// The pool attributes (CUmemPool_attribute): the reuse policies take an
// int, the others a cuuint64_t.
const (
	PoolReuseFollowEvents  = int(C.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
	PoolReuseOpportunistic = int(C.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
	PoolReuseInternalDeps  = int(C.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
	PoolReleaseThreshold   = int(C.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
	PoolReservedCurrent    = int(C.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
	PoolReservedHigh       = int(C.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
	PoolUsedCurrent        = int(C.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
	PoolUsedHigh           = int(C.CU_MEMPOOL_ATTR_USED_MEM_HIGH)
)

func DeviceGetDefaultMemPool(dev int) (uintptr, int) {
	var p C.CUmemoryPool
	c := C.cuDeviceGetDefaultMemPool(&p, C.CUdevice(dev))
	return uintptr(unsafe.Pointer(p)), r(c)
}

func MemAllocAsync(n int, s uintptr) (uintptr, int) {
	var p C.CUdeviceptr
	c := C.cuMemAllocAsync(&p, C.size_t(n), stream(s))
	return uintptr(p), r(c)
}

// MemPoolSetInt sets an int attribute (a reuse policy: 0 off, 1 on).
func MemPoolSetInt(pool uintptr, attr, v int) int {
	x := C.int(v)
	return r(C.cuMemPoolSetAttribute(C.CUmemoryPool(ptr(pool)), C.CUmemPool_attribute(attr), unsafe.Pointer(&x)))
}

// MemPoolSetUint64 sets a cuuint64_t attribute.
func MemPoolSetUint64(pool uintptr, attr int, v uint64) int {
	x := C.cuuint64_t(v)
	return r(C.cuMemPoolSetAttribute(C.CUmemoryPool(ptr(pool)), C.CUmemPool_attribute(attr), unsafe.Pointer(&x)))
}

// MemPoolGetUint64 reads a cuuint64_t attribute.
func MemPoolGetUint64(pool uintptr, attr int) (uint64, int) {
	var x C.cuuint64_t
	c := C.cuMemPoolGetAttribute(C.CUmemoryPool(ptr(pool)), C.CUmemPool_attribute(attr), unsafe.Pointer(&x))
	return uint64(x), r(c)
}

func MemPoolTrimTo(pool uintptr, keep int) int {
	return r(C.cuMemPoolTrimTo(C.CUmemoryPool(ptr(pool)), C.size_t(keep)))
}
