//go:build cuda

package conformance

// The bindings of the stream-ordered pool calls that share a pool between
// processes: a pool made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (or
// none), its file descriptor, and an allocation's export data.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdint.h>
#include <string.h>

static CUresult conf_pool_create(CUmemoryPool *pool, int shared) {
	CUmemPoolProps p;
	memset(&p, 0, sizeof p);
	p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.handleTypes = shared ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = 0;
	return cuMemPoolCreate(pool, &p);
}

static CUresult conf_pool_export_fd(int *fd, CUmemoryPool pool) {
	return cuMemPoolExportToShareableHandle(fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

static CUresult conf_pool_import_fd(CUmemoryPool *pool, int fd) {
	return cuMemPoolImportFromShareableHandle(pool, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}
*/
import "C"

import "unsafe"

// PoolExportDataSize is the size of a CUmemPoolPtrExportData.
const PoolExportDataSize = 64

// MemPoolCreate makes a pool of device 0, shared (POSIX file descriptor) or not.
func MemPoolCreate(shared bool) (uintptr, int) {
	var p C.CUmemoryPool
	s := 0
	if shared {
		s = 1
	}
	c := C.conf_pool_create(&p, C.int(s))
	return uintptr(unsafe.Pointer(p)), r(c)
}

func MemPoolDestroy(pool uintptr) int { return r(C.cuMemPoolDestroy(C.CUmemoryPool(ptr(pool)))) }

func MemAllocFromPoolAsync(n int, pool, s uintptr) (uintptr, int) {
	var p C.CUdeviceptr
	c := C.cuMemAllocFromPoolAsync(&p, C.size_t(n), C.CUmemoryPool(ptr(pool)), stream(s))
	return uintptr(p), r(c)
}

func MemFreeAsync(p, s uintptr) int { return r(C.cuMemFreeAsync(C.CUdeviceptr(p), stream(s))) }

func MemPoolExportFD(pool uintptr) (int, int) {
	var fd C.int
	c := C.conf_pool_export_fd(&fd, C.CUmemoryPool(ptr(pool)))
	return int(fd), r(c)
}

func MemPoolImportFD(fd int) (uintptr, int) {
	var p C.CUmemoryPool
	c := C.conf_pool_import_fd(&p, C.int(fd))
	return uintptr(unsafe.Pointer(p)), r(c)
}

func MemPoolExportPointer(p uintptr) ([]byte, int) {
	var d C.CUmemPoolPtrExportData
	c := C.cuMemPoolExportPointer(&d, C.CUdeviceptr(p))
	return C.GoBytes(unsafe.Pointer(&d), PoolExportDataSize), r(c)
}

func MemPoolImportPointer(pool uintptr, data []byte) (uintptr, int) {
	var d C.CUmemPoolPtrExportData
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&d)), PoolExportDataSize), data)
	var p C.CUdeviceptr
	c := C.cuMemPoolImportPointer(&p, C.CUmemoryPool(ptr(pool)), &d)
	return uintptr(p), r(c)
}
