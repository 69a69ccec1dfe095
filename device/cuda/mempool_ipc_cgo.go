//go:build cuda

package cuda

// The driver calls that share a stream-ordered pool between processes
// (cuMemPoolExportToShareableHandle and its kin), which gorgonia.org/cu
// does not bind: with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR the
// shareable handle is an int, a file descriptor; on import it is passed
// as the pointer's value ("(void *)(uintptr_t)fd", as cuda.core does).

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdint.h>
#include <string.h>

static CUresult cuarray_mempool_create_shared(CUmemoryPool *pool, int ordinal) {
	CUmemPoolProps p;
	memset(&p, 0, sizeof p);
	p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = ordinal;
	return cuMemPoolCreate(pool, &p);
}

static CUresult cuarray_mempool_export_fd(int *fd, CUmemoryPool pool) {
	return cuMemPoolExportToShareableHandle(fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

static CUresult cuarray_mempool_import_fd(CUmemoryPool *pool, int fd) {
	return cuMemPoolImportFromShareableHandle(pool, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/device/driver"
)

func memPoolCreateShared(ordinal int) (uintptr, int) {
	var pool C.CUmemoryPool
	r := C.cuarray_mempool_create_shared(&pool, C.int(ordinal))
	return uintptr(unsafe.Pointer(pool)), code(r)
}

func memPoolExportFD(pool uintptr) (int, int) {
	var fd C.int
	r := C.cuarray_mempool_export_fd(&fd, cpool(pool))
	return int(fd), code(r)
}

func memPoolImportFD(fd int) (uintptr, int) {
	var pool C.CUmemoryPool
	r := C.cuarray_mempool_import_fd(&pool, C.int(fd))
	return uintptr(unsafe.Pointer(pool)), code(r)
}

func memPoolExportPointer(p uintptr) (driver.PoolExportData, int) {
	var data C.CUmemPoolPtrExportData
	r := C.cuMemPoolExportPointer(&data, C.CUdeviceptr(p))
	var out driver.PoolExportData
	copy(out[:], unsafe.Slice((*byte)(unsafe.Pointer(&data)), driver.PoolExportDataSize))
	return out, code(r)
}

func memPoolImportPointer(pool uintptr, data driver.PoolExportData) (uintptr, int) {
	var cdata C.CUmemPoolPtrExportData
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&cdata)), driver.PoolExportDataSize), data[:])
	var p C.CUdeviceptr
	r := C.cuMemPoolImportPointer(&p, cpool(pool), &cdata)
	return uintptr(p), code(r)
}

func memFreeImported(p uintptr) int { return code(C.cuMemFree(C.CUdeviceptr(p))) }
