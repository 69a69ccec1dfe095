//go:build cuda

package conformance

// The virtual memory management calls, for the observations of
// observe_vmm_test.go: pinned memory on device 0, read-write access.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#cgo !linux LDFLAGS: -lcuda
#include <cuda.h>
#include <string.h>

static void conf_vmm_prop(CUmemAllocationProp *p) {
	memset(p, 0, sizeof *p);
	p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = 0;
}

static CUresult conf_granularity(size_t *g, int recommended) {
	CUmemAllocationProp p;
	conf_vmm_prop(&p);
	return cuMemGetAllocationGranularity(g, &p, recommended ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED : CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

static CUresult conf_mem_create(CUmemGenericAllocationHandle *h, size_t size) {
	CUmemAllocationProp p;
	conf_vmm_prop(&p);
	return cuMemCreate(h, size, &p, 0);
}

static CUresult conf_set_access(CUdeviceptr ptr, size_t size) {
	CUmemAccessDesc a;
	memset(&a, 0, sizeof a);
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = 0;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return cuMemSetAccess(ptr, size, &a, 1);
}
*/
import "C"

// MemGranularity returns device 0's minimum or recommended granularity of
// pinned memory (cuMemGetAllocationGranularity).
func MemGranularity(recommended bool) (int64, int) {
	var g C.size_t
	rec := C.int(0)
	if recommended {
		rec = 1
	}
	c := C.conf_granularity(&g, rec)
	return int64(g), r(c)
}

func MemAddressReserve(size, alignment int64) (uintptr, int) {
	var p C.CUdeviceptr
	c := C.cuMemAddressReserve(&p, C.size_t(size), C.size_t(alignment), 0, 0)
	return uintptr(p), r(c)
}

func MemAddressFree(p uintptr, size int64) int {
	return r(C.cuMemAddressFree(C.CUdeviceptr(p), C.size_t(size)))
}

// MemCreate makes size bytes of pinned memory on device 0 (cuMemCreate).
func MemCreate(size int64) (uint64, int) {
	var h C.CUmemGenericAllocationHandle
	c := C.conf_mem_create(&h, C.size_t(size))
	return uint64(h), r(c)
}

func MemRelease(h uint64) int { return r(C.cuMemRelease(C.CUmemGenericAllocationHandle(h))) }

func MemMap(p uintptr, size, offset int64, h uint64) int {
	return r(C.cuMemMap(C.CUdeviceptr(p), C.size_t(size), C.size_t(offset), C.CUmemGenericAllocationHandle(h), 0))
}

func MemUnmap(p uintptr, size int64) int { return r(C.cuMemUnmap(C.CUdeviceptr(p), C.size_t(size))) }

// MemSetAccess makes [p, p+size) readable and writable by device 0.
func MemSetAccess(p uintptr, size int64) int {
	return r(C.conf_set_access(C.CUdeviceptr(p), C.size_t(size)))
}
