//go:build cuda

package cuda

// The virtual memory management calls (cuMemAddressReserve, cuMemCreate,
// cuMemMap, cuMemSetAccess and their inverses), which gorgonia.org/cu
// does not bind: pinned memory on one device, no shareable handle types.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <string.h>

static void cuarray_vmm_prop(CUmemAllocationProp *p, int ordinal) {
	memset(p, 0, sizeof *p);
	p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
	p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = ordinal;
}

static CUresult cuarray_mem_granularity(size_t *g, int ordinal, int recommended) {
	CUmemAllocationProp p;
	cuarray_vmm_prop(&p, ordinal);
	return cuMemGetAllocationGranularity(g, &p, recommended ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED : CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

static CUresult cuarray_mem_create(CUmemGenericAllocationHandle *h, size_t size, int ordinal) {
	CUmemAllocationProp p;
	cuarray_vmm_prop(&p, ordinal);
	return cuMemCreate(h, size, &p, 0);
}

static CUresult cuarray_mem_set_access(CUdeviceptr ptr, size_t size, int ordinal, int rw) {
	CUmemAccessDesc a;
	memset(&a, 0, sizeof a);
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = ordinal;
	a.flags = rw ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	return cuMemSetAccess(ptr, size, &a, 1);
}
*/
import "C"

func memGranularity(ordinal int, recommended bool) (int64, int) {
	var g C.size_t
	rec := C.int(0)
	if recommended {
		rec = 1
	}
	r := C.cuarray_mem_granularity(&g, C.int(ordinal), rec)
	return int64(g), code(r)
}

func memAddressReserve(size, alignment int64) (uintptr, int) {
	var p C.CUdeviceptr
	r := C.cuMemAddressReserve(&p, C.size_t(size), C.size_t(alignment), 0, 0)
	return uintptr(p), code(r)
}

func memAddressFree(p uintptr, size int64) int {
	return code(C.cuMemAddressFree(C.CUdeviceptr(p), C.size_t(size)))
}

func memCreate(size int64, ordinal int) (uint64, int) {
	var h C.CUmemGenericAllocationHandle
	r := C.cuarray_mem_create(&h, C.size_t(size), C.int(ordinal))
	return uint64(h), code(r)
}

func memRelease(h uint64) int { return code(C.cuMemRelease(C.CUmemGenericAllocationHandle(h))) }

func memMap(p uintptr, size, offset int64, h uint64) int {
	return code(C.cuMemMap(C.CUdeviceptr(p), C.size_t(size), C.size_t(offset), C.CUmemGenericAllocationHandle(h), 0))
}

func memUnmap(p uintptr, size int64) int {
	return code(C.cuMemUnmap(C.CUdeviceptr(p), C.size_t(size)))
}

func memSetAccess(p uintptr, size int64, ordinal int, rw bool) int {
	w := C.int(0)
	if rw {
		w = 1
	}
	return code(C.cuarray_mem_set_access(C.CUdeviceptr(p), C.size_t(size), C.int(ordinal), w))
}
