// Command libcuarray is cuarray's C library, built with
// `make libcuarray` (go build -buildmode=c-shared) into
// build/libcuarray.so and build/libcuarray.h. python/cuarray.py loads it
// with ctypes; C programs link it.
//
// Arrays and devices are opaque uint64 handles. Every function returns
// NULL on success or an error message the caller frees with
// cuarray_free_string; results come back through pointers. Strings the
// library returns (JSON) are freed the same way.
//
//	cuarray_device(spec, &dev)                     open "sim:0", "cuda:0" or "" (the default) once
//	cuarray_empty(dev, "float32", ndim, shape, zero, &arr)
//	cuarray_view(arr, op_json, &view)              slice, index, flip, permute, transpose, reshape, readonly
//	cuarray_release(arr)                           free an array (a view drops its handle)
//	cuarray_copy(dst, src)                         device copy through transfer
//	cuarray_to_host(arr, p, n) / cuarray_from_host(arr, p, n)   packed C-order bytes
//	cuarray_info(arr, &json)                       shape, strides, dtype, pointer, device, ...
//	cuarray_interface(arr, stream, host, &json)    __cuda_array_interface__ / __array_interface__
//	cuarray_import_interface(dev, json, &arr)      borrow one (dev 0: host memory)
//	cuarray_to_dlpack(arr, versioned, copy, &t)    a managed tensor in C memory
//	cuarray_from_dlpack(dev, t, versioned, &arr)   borrow one; release calls its deleter
//	cuarray_dlpack_delete(t, versioned)
//	cuarray_ledger(dev, &json)                     the device's ledger
//	cuarray_ipc_export(arr, &json)                 a descriptor another process opens
//	cuarray_ipc_open(dev, json, &arr)              open one (release closes it)
//	cuarray_capsule_destructor                     for PyCapsule_New
package main

/*
#cgo LDFLAGS: -ldl
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"unsafe"
)

func main() {}

// result turns an error into the message C receives (NULL for none).
func result(err error) *C.char {
	if err == nil {
		return nil
	}
	return C.CString(err.Error())
}

func putString(out **C.char, b []byte, err error) *C.char {
	if err != nil {
		return result(err)
	}
	*out = C.CString(string(b))
	return nil
}

//export cuarray_free_string
func cuarray_free_string(s *C.char) { C.free(unsafe.Pointer(s)) }

//export cuarray_device
func cuarray_device(spec *C.char, out *C.uint64_t) *C.char {
	h, err := openDevice(C.GoString(spec))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_empty
func cuarray_empty(dev C.uint64_t, dtype *C.char, ndim C.int, shape *C.int64_t, zero C.int, out *C.uint64_t) *C.char {
	if ndim < 0 || ndim > 64 || (ndim > 0 && shape == nil) {
		return C.CString("cuarray_empty: ndim must be 0 to 64, with a shape array")
	}
	dims := make([]int, int(ndim))
	for i, n := range unsafe.Slice(shape, int(ndim)) {
		dims[i] = int(n)
	}
	h, err := empty(uint64(dev), C.GoString(dtype), dims, zero != 0)
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_view
func cuarray_view(arr C.uint64_t, op *C.char, out *C.uint64_t) *C.char {
	h, err := view(uint64(arr), []byte(C.GoString(op)))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_release
func cuarray_release(arr C.uint64_t) *C.char { return result(releaseArray(uint64(arr))) }

//export cuarray_copy
func cuarray_copy(dst, src C.uint64_t) *C.char { return result(copyArrays(uint64(dst), uint64(src))) }

//export cuarray_to_host
func cuarray_to_host(arr C.uint64_t, p unsafe.Pointer, n C.int64_t) *C.char {
	return result(copyHost(uint64(arr), p, int64(n), false))
}

//export cuarray_from_host
func cuarray_from_host(arr C.uint64_t, p unsafe.Pointer, n C.int64_t) *C.char {
	return result(copyHost(uint64(arr), p, int64(n), true))
}

//export cuarray_info
func cuarray_info(arr C.uint64_t, out **C.char) *C.char {
	b, err := info(uint64(arr))
	return putString(out, b, err)
}

//export cuarray_interface
func cuarray_interface(arr C.uint64_t, stream C.uintptr_t, host C.int, out **C.char) *C.char {
	b, err := exportCAI(uint64(arr), uintptr(stream), host != 0)
	return putString(out, b, err)
}

//export cuarray_import_interface
func cuarray_import_interface(dev C.uint64_t, js *C.char, out *C.uint64_t) *C.char {
	h, err := importCAI(uint64(dev), []byte(C.GoString(js)))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_to_dlpack
func cuarray_to_dlpack(arr C.uint64_t, versioned, copied C.int, out *unsafe.Pointer) *C.char {
	t, err := toDLPack(uint64(arr), versioned != 0, copied != 0)
	*out = t
	return result(err)
}

//export cuarray_from_dlpack
func cuarray_from_dlpack(dev C.uint64_t, t unsafe.Pointer, versioned C.int, out *C.uint64_t) *C.char {
	h, err := fromDLPack(uint64(dev), t, versioned != 0)
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_dlpack_delete
func cuarray_dlpack_delete(t unsafe.Pointer, versioned C.int) {
	if versioned != 0 {
		deleteDLPack(t)
	} else {
		deleteDLPackLegacy(t)
	}
}

//export cuarray_ledger
func cuarray_ledger(dev C.uint64_t, out **C.char) *C.char {
	b, err := ledgerJSON(uint64(dev))
	return putString(out, b, err)
}

//export cuarray_array_device
func cuarray_array_device(arr C.uint64_t, out *C.uint64_t) *C.char {
	e, err := arrayOf(uint64(arr))
	if err == nil && e.dev != nil {
		*out = C.uint64_t(deviceHandle(e.dev))
	}
	return result(err)
}

//export cuarray_ipc_export
func cuarray_ipc_export(arr C.uint64_t, out **C.char) *C.char {
	b, err := ipcExport(uint64(arr))
	return putString(out, b, err)
}

//export cuarray_ipc_open
func cuarray_ipc_open(dev C.uint64_t, js *C.char, out *C.uint64_t) *C.char {
	h, err := ipcOpen(uint64(dev), []byte(C.GoString(js)))
	*out = C.uint64_t(h)
	return result(err)
}
