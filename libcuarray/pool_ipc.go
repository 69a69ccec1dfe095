//go:build cgo

package main

// Stream-ordered pools shared between processes, for Python
// (python/cuarray_pool.py): a shared pool and arrays of its memory, the
// pool's file descriptor and an array's descriptor for another process,
// and that process's import of both.
//
//	cuarray_pool_shared(dev, &pool)                a shared pool (cuMemPoolCreate, POSIX file descriptor)
//	cuarray_pool_empty(pool, dtype, ndim, shape, &arr)   an array of its memory, complete on the device
//	cuarray_pool_export_fd(pool, &fd)              a new descriptor of the pool, for SCM_RIGHTS
//	cuarray_pool_export_array(pool, arr, &json)    an array of the pool for another process
//	cuarray_pool_import(dev, fd, &pool)            import a pool another process sent
//	cuarray_pool_open(pool, json, &arr)            open an array of an imported pool (release frees it)
//	cuarray_pool_release(pool)                     destroy a shared or an imported pool

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/interop"
)

// sharedPool is a pool handed to C, with the stream its arrays are
// allocated on.
type sharedPool struct {
	dev    device.Device
	pool   driver.SharedMemPool
	stream driver.Stream
}

// importedPool is an imported pool handed to C.
type importedPool struct {
	dev  device.Device
	pool driver.ImportedMemPool
}

func poolShared(dev uint64) (uint64, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	ps, ok := d.(driver.PoolSharing)
	if d == nil || !ok {
		return 0, fmt.Errorf("shared pool: the device cannot share pools: %w", errHandle)
	}
	pool, err := ps.NewSharedMemPool()
	if err != nil {
		return 0, err
	}
	s, err := d.NewStream()
	if err != nil {
		return 0, errors.Join(err, pool.Destroy())
	}
	return register(&sharedPool{dev: d, pool: pool, stream: s}), nil
}

func poolOf[T any](h uint64) (T, error) {
	v, err := valueOf(h)
	p, ok := v.(T)
	if err == nil && !ok {
		err = fmt.Errorf("handle %d is not such a pool: %w", h, errHandle)
	}
	return p, err
}

// poolEmpty allocates an array of sp's memory and waits for the allocation
// ("The imported memory must not be accessed before the allocation
// operation completes in the exporting process.", cuMemPoolImportPointer).
func poolEmpty(h uint64, dtype string, shape []int) (uint64, error) {
	sp, err := poolOf[*sharedPool](h)
	if err != nil {
		return 0, err
	}
	dt, err := devarray.ParseDType(dtype)
	if err != nil {
		return 0, err
	}
	a, err := devarray.EmptyAsync(sp.dev, driver.PoolStream{AsyncAllocator: sp.stream, Pool: sp.pool}, dt, shape...)
	if err != nil {
		return 0, err
	}
	if err := sp.stream.Synchronize(); err != nil {
		return 0, errors.Join(err, a.Free())
	}
	return newArray(a, sp.dev), nil
}

func poolExportFD(h uint64) (int, error) {
	sp, err := poolOf[*sharedPool](h)
	if err != nil {
		return -1, err
	}
	return sp.pool.ExportFD()
}

func poolExportArray(h, arr uint64) ([]byte, error) {
	sp, err := poolOf[*sharedPool](h)
	if err != nil {
		return nil, err
	}
	e, err := arrayOf(arr)
	if err != nil {
		return nil, err
	}
	d, err := interop.ExportPoolIPC(sp.dev, sp.pool, e.arr, e.arr)
	if err != nil {
		return nil, err
	}
	return json.Marshal(d)
}

func poolImport(dev uint64, fd int) (uint64, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	if d == nil {
		return 0, fmt.Errorf("import pool: no device: %w", errHandle)
	}
	p, err := interop.ImportPool(d, fd)
	if err != nil {
		return 0, err
	}
	return register(&importedPool{dev: d, pool: p}), nil
}

func poolOpen(h uint64, js []byte) (uint64, error) {
	ip, err := poolOf[*importedPool](h)
	if err != nil {
		return 0, err
	}
	d, err := interop.ParsePoolIPC(js)
	if err != nil {
		return 0, err
	}
	a, err := interop.OpenPoolIPC(ip.dev, ip.pool, d)
	if err != nil {
		return 0, err
	}
	return newArray(a, ip.dev), nil
}

func poolRelease(h uint64) error {
	v, err := valueOf(h)
	if err != nil {
		return err
	}
	switch v.(type) {
	case *sharedPool, *importedPool:
	default:
		return fmt.Errorf("handle %d is not a pool: %w", h, errHandle)
	}
	if v, err = take(h); err != nil {
		return err
	}
	switch p := v.(type) {
	case *sharedPool:
		return errors.Join(p.pool.Destroy(), p.stream.Close())
	case *importedPool:
		return p.pool.Destroy()
	}
	return nil
}

//export cuarray_pool_shared
func cuarray_pool_shared(dev C.uint64_t, out *C.uint64_t) *C.char {
	if msg := null("cuarray_pool_shared", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, err := poolShared(uint64(dev))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_pool_empty
func cuarray_pool_empty(pool C.uint64_t, dtype *C.char, ndim C.int, shape *C.int64_t, out *C.uint64_t) *C.char {
	if msg := null("cuarray_pool_empty", "dtype, out", unsafe.Pointer(dtype), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	if ndim < 0 || ndim > 64 || (ndim > 0 && shape == nil) {
		return C.CString("cuarray_pool_empty: ndim must be 0 to 64, with a shape array")
	}
	dims := make([]int, int(ndim))
	for i, n := range unsafe.Slice(shape, int(ndim)) {
		dims[i] = int(n)
	}
	h, err := poolEmpty(uint64(pool), C.GoString(dtype), dims)
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_pool_export_fd
func cuarray_pool_export_fd(pool C.uint64_t, out *C.int) *C.char {
	if msg := null("cuarray_pool_export_fd", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	fd, err := poolExportFD(uint64(pool))
	*out = C.int(fd)
	return result(err)
}

//export cuarray_pool_export_array
func cuarray_pool_export_array(pool, arr C.uint64_t, out **C.char) *C.char {
	if msg := null("cuarray_pool_export_array", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	b, err := poolExportArray(uint64(pool), uint64(arr))
	return putString(out, b, err)
}

//export cuarray_pool_import
func cuarray_pool_import(dev C.uint64_t, fd C.int, out *C.uint64_t) *C.char {
	if msg := null("cuarray_pool_import", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, err := poolImport(uint64(dev), int(fd))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_pool_open
func cuarray_pool_open(pool C.uint64_t, js *C.char, out *C.uint64_t) *C.char {
	if msg := null("cuarray_pool_open", "descriptor, out", unsafe.Pointer(js), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, err := poolOpen(uint64(pool), []byte(C.GoString(js)))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_pool_release
func cuarray_pool_release(pool C.uint64_t) *C.char {
	defer saveContext().restore()
	return result(poolRelease(uint64(pool)))
}
