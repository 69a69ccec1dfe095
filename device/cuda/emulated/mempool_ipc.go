//go:build cuda && cudaemu && linux

package emulated

// Stream-ordered pools shared between processes
// (cuMemPoolExportToShareableHandle, cuMemPoolImportFromShareableHandle,
// cuMemPoolExportPointer, cuMemPoolImportPointer) on sim's shared pools
// (device/sim/mempool_ipc.go, which quotes the rules it keeps). Only
// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR is emulated: its shareable
// handle is a file descriptor, written to an int on export and passed as
// the pointer's value on import.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// importedPool is a CUmemoryPool cuMemPoolImportFromShareableHandle made.
// "Imported memory pools do not support creating new allocations. As such
// imported memory pools may not be used in cuDeviceSetMemPool or
// cuMemAllocFromPoolAsync calls.": it is no memPool, so those calls, and
// the attribute calls (a guess: the pages do not say), answer
// CUDA_ERROR_INVALID_VALUE.
type importedPool struct {
	ctx *context
	ip  driver.ImportedMemPool
}

// importedPointers are the pointers cuMemPoolImportPointer returned and
// cuMemFree has not freed, by address.
var importedPointers struct {
	sync.Mutex
	m map[uintptr]*importedPool
}

// createSharedPool makes the pool of cuMemPoolCreate with handle types:
// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR is emulated, the others (Win32
// handles, fabric) are not.
func createSharedPool(c *context, sd *sim.Device, types C.CUmemAllocationHandleType) (driver.MemPool, cuResult) {
	if types != C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR {
		return nil, errNotSupported
	}
	mp, err := sd.NewSharedMemPool()
	return mp, c.codeOf(err)
}

// cuMemPoolExportToShareableHandle: "Given an IPC capable mempool, create
// an OS handle to share the pool with another process." flags "must be
// 0"; a handle type other than the pool's is CUDA_ERROR_INVALID_VALUE (a
// guess: the page names the error, not the case).
//
//export cuemu_cuMemPoolExportToShareableHandle
func cuemu_cuMemPoolExportToShareableHandle(handle unsafe.Pointer, pool C.CUmemoryPool, types C.CUmemAllocationHandleType, flags C.ulonglong) C.CUresult {
	p, r := poolOf(uintptr(unsafe.Pointer(pool)))
	if r == success && (handle == nil || flags != 0 || types != C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
		r = errInvalidValue
	}
	if r != success {
		return result("cuMemPoolExportToShareableHandle", r)
	}
	sp, ok := p.p.(driver.SharedMemPool)
	if !ok {
		return result("cuMemPoolExportToShareableHandle", errInvalidValue)
	}
	fd, err := sp.ExportFD()
	if err == nil {
		*(*C.int)(handle) = C.int(fd)
	}
	return result("cuMemPoolExportToShareableHandle", p.ctx.codeOf(err))
}

// cuMemPoolImportFromShareableHandle: "imports a memory pool from a shared
// handle.", into the current context's device. A descriptor that is not a
// pool's is CUDA_ERROR_INVALID_VALUE; so is the descriptor of a destroyed
// pool or an exited exporter, and this process's own pool is
// CUDA_ERROR_INVALID_CONTEXT, as for cuIpcOpenMemHandle (guesses, logged
// by conformance's TestObservations).
//
//export cuemu_cuMemPoolImportFromShareableHandle
func cuemu_cuMemPoolImportFromShareableHandle(pool *C.CUmemoryPool, handle unsafe.Pointer, types C.CUmemAllocationHandleType, flags C.ulonglong) C.CUresult {
	if pool == nil || flags != 0 || types != C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR {
		return result("cuMemPoolImportFromShareableHandle", errInvalidValue)
	}
	c, dev, r := current()
	if r != success {
		return result("cuMemPoolImportFromShareableHandle", r)
	}
	ip, err := dev.ImportMemPool(int(uintptr(handle)))
	if err != nil {
		return result("cuMemPoolImportFromShareableHandle", c.codeOf(err))
	}
	h := drv.newHandle(&importedPool{ctx: c, ip: ip})
	c.own(h)
	*pool = C.CUmemoryPool(cPointer(h))
	return result("cuMemPoolImportFromShareableHandle", success)
}

// cuMemPoolExportPointer: "Constructs shareData_out for sharing a specific
// allocation from an already shared memory pool."
//
//export cuemu_cuMemPoolExportPointer
func cuemu_cuMemPoolExportPointer(data *C.CUmemPoolPtrExportData, p C.CUdeviceptr) C.CUresult {
	if data == nil {
		return result("cuMemPoolExportPointer", errInvalidValue)
	}
	c, dev, r := current()
	if r != success {
		return result("cuMemPoolExportPointer", r)
	}
	d, err := dev.ExportPoolPointer(devarray.Ptr(p))
	if err == nil {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(data)), driver.PoolExportDataSize), d[:])
	}
	return result("cuMemPoolExportPointer", c.codeOf(err))
}

// cuMemPoolImportPointer: "Returns in ptr_out a pointer to the imported
// memory." It is freed with cuMemFree ("The pointer may be freed with
// cuMemFree or cuMemFreeAsync."; cuMemFreeAsync of an imported pointer is
// not emulated: CUDA_ERROR_INVALID_VALUE).
//
//export cuemu_cuMemPoolImportPointer
func cuemu_cuMemPoolImportPointer(p *C.CUdeviceptr, pool C.CUmemoryPool, data *C.CUmemPoolPtrExportData) C.CUresult {
	if p == nil || data == nil {
		return result("cuMemPoolImportPointer", errInvalidValue)
	}
	if !drv.ready() {
		return result("cuMemPoolImportPointer", errNotInitialized)
	}
	ip, ok := lookup[*importedPool](uintptr(unsafe.Pointer(pool)))
	if !ok {
		return result("cuMemPoolImportPointer", errInvalidValue)
	}
	if r := ip.ctx.usable(); r != success {
		return result("cuMemPoolImportPointer", r)
	}
	var d driver.PoolExportData
	copy(d[:], unsafe.Slice((*byte)(unsafe.Pointer(data)), driver.PoolExportDataSize))
	addr, _, err := ip.ip.ImportPointer(d)
	if err != nil {
		return result("cuMemPoolImportPointer", ip.ctx.codeOf(err))
	}
	importedPointers.Lock()
	if importedPointers.m == nil {
		importedPointers.m = make(map[uintptr]*importedPool)
	}
	importedPointers.m[uintptr(addr)] = ip
	importedPointers.Unlock()
	*p = C.CUdeviceptr(addr)
	return result("cuMemPoolImportPointer", success)
}

// freeImported frees p if cuMemPoolImportPointer returned it (cuMemFree
// of an imported pointer), reporting whether it did.
func freeImported(c *context, p uintptr) (cuResult, bool) {
	importedPointers.Lock()
	ip, ok := importedPointers.m[p]
	delete(importedPointers.m, p)
	importedPointers.Unlock()
	if !ok {
		return success, false
	}
	return c.codeOf(ip.ip.FreePointer(devarray.Ptr(p))), true
}

// destroyImported destroys the imported pool of handle h, if it is one
// (cuMemPoolDestroy of an imported pool), reporting whether it was.
func destroyImported(h uintptr) (cuResult, bool) {
	ip, ok := lookup[*importedPool](h)
	if !ok {
		return success, false
	}
	importedPointers.Lock()
	for p, q := range importedPointers.m {
		if q == ip {
			delete(importedPointers.m, p)
		}
	}
	importedPointers.Unlock()
	err := ip.ip.Destroy()
	drv.forget(h)
	return ip.ctx.codeOf(err), true
}
