//go:build cuda

package cuda

// The stream-ordered allocator's driver calls (cuMemAllocAsync and the
// cuMemPool family), which gorgonia.org/cu does not bind.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <string.h>

static CUresult cuarray_mempool_create(CUmemoryPool *pool, int ordinal) {
	CUmemPoolProps p;
	memset(&p, 0, sizeof p);
	p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = ordinal;
	return cuMemPoolCreate(pool, &p);
}
*/
import "C"

import "unsafe"

// The pool attributes (CUmemPool_attribute).
const (
	poolAttrReuseFollowEvents  = int(C.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
	poolAttrReuseOpportunistic = int(C.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
	poolAttrReuseInternalDeps  = int(C.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
	poolAttrReleaseThreshold   = int(C.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
	poolAttrReservedCurrent    = int(C.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
	poolAttrReservedHigh       = int(C.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
	poolAttrUsedCurrent        = int(C.CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
	poolAttrUsedHigh           = int(C.CU_MEMPOOL_ATTR_USED_MEM_HIGH)
)

// cpool makes a CUmemoryPool of the handle the driver gave (a pointer to
// its own memory, never Go's), without converting a uintptr to a pointer.
func cpool(h uintptr) C.CUmemoryPool {
	var p C.CUmemoryPool
	*(*uintptr)(unsafe.Pointer(&p)) = h
	return p
}

func memAllocAsync(n int64, s C.CUstream) (uintptr, int) {
	var p C.CUdeviceptr
	r := C.cuMemAllocAsync(&p, C.size_t(n), s)
	return uintptr(p), code(r)
}

func memAllocFromPoolAsync(n int64, pool uintptr, s C.CUstream) (uintptr, int) {
	var p C.CUdeviceptr
	r := C.cuMemAllocFromPoolAsync(&p, C.size_t(n), cpool(pool), s)
	return uintptr(p), code(r)
}

func memFreeAsync(p uintptr, s C.CUstream) int {
	return code(C.cuMemFreeAsync(C.CUdeviceptr(p), s))
}

func deviceGetDefaultMemPool(ordinal int) (uintptr, int) {
	var pool C.CUmemoryPool
	r := C.cuDeviceGetDefaultMemPool(&pool, C.CUdevice(ordinal))
	return uintptr(unsafe.Pointer(pool)), code(r)
}

func memPoolCreate(ordinal int) (uintptr, int) {
	var pool C.CUmemoryPool
	r := C.cuarray_mempool_create(&pool, C.int(ordinal))
	return uintptr(unsafe.Pointer(pool)), code(r)
}

func memPoolDestroy(pool uintptr) int { return code(C.cuMemPoolDestroy(cpool(pool))) }

func memPoolTrimTo(pool uintptr, keep int64) int {
	return code(C.cuMemPoolTrimTo(cpool(pool), C.size_t(keep)))
}

// memPoolSetInt sets an attribute whose value is an int (the reuse policies).
func memPoolSetInt(pool uintptr, attr int, v int) int {
	x := C.int(v)
	return code(C.cuMemPoolSetAttribute(cpool(pool), C.CUmemPool_attribute(attr), unsafe.Pointer(&x)))
}

func memPoolGetInt(pool uintptr, attr int) (int, int) {
	var x C.int
	r := C.cuMemPoolGetAttribute(cpool(pool), C.CUmemPool_attribute(attr), unsafe.Pointer(&x))
	return int(x), code(r)
}

// memPoolSetUint64 sets an attribute whose value is a cuuint64_t.
func memPoolSetUint64(pool uintptr, attr int, v uint64) int {
	x := C.cuuint64_t(v)
	return code(C.cuMemPoolSetAttribute(cpool(pool), C.CUmemPool_attribute(attr), unsafe.Pointer(&x)))
}

func memPoolGetUint64(pool uintptr, attr int) (uint64, int) {
	var x C.cuuint64_t
	r := C.cuMemPoolGetAttribute(cpool(pool), C.CUmemPool_attribute(attr), unsafe.Pointer(&x))
	return uint64(x), code(r)
}
