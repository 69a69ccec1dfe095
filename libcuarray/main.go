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
//	cuarray_empty_async(s, "float32", ndim, shape, &arr)   from the default stream-ordered pool, in stream s's order
//	cuarray_view(arr, op_json, &view)              slice, index, flip, permute, transpose, reshape, readonly
//	cuarray_release(arr)                           free an array (a view drops its handle); an async
//	                                               copy using it keeps the memory until it is done
//	cuarray_copy(dst, src)                         device copy through the device's Copier
//	cuarray_to_host(arr, p, n) / cuarray_from_host(arr, p, n)   packed C-order bytes
//	cuarray_info(arr, &json)                       shape, strides, dtype, pointer, device, ...
//	cuarray_describe(arr, &desc)                   the same in a cuarray_desc struct, without JSON
//	cuarray_alive(arr)                             an error if the array's memory is gone
//	cuarray_interface(arr, stream, host, &json)    __cuda_array_interface__ / __array_interface__
//	cuarray_export_stream(arr, &stream)            the stream a CAI export names (0: none)
//	cuarray_export_wait(arr, consumer)             readies an export for a consumer (see below)
//	cuarray_import_interface(dev, json, &arr)      borrow one (dev 0: host memory)
//	cuarray_to_dlpack(arr, versioned, copy, &t)    a managed tensor in C memory (the host waits)
//	cuarray_export_dlpack(arr, versioned, copy, consumer, &t)   the same for a consumer's stream
//	cuarray_from_dlpack(dev, t, versioned, &arr)   borrow one; release calls its deleter
//	cuarray_dlpack_delete(t, versioned)
//	cuarray_ledger(dev, &json)                     the device's ledger
//	cuarray_ledger_report(dev, &text)              the same as Go's Ledger.Report() writes it, a text table
//	cuarray_device_info(dev, &text)                the device's lines of `cuarray info` (device.Describe)
//	cuarray_ipc_export(arr, &json)                 a descriptor another process opens
//	cuarray_ipc_open(dev, json, &arr)              open one (release closes it)
//	cuarray_stream_new(dev, &s, &handle)           a stream, and the handle async calls take
//	cuarray_stream_synchronize(s) / cuarray_stream_release(s)
//	cuarray_stream_hold(s, &r) / cuarray_stream_resume(r)   sim only: hold a stream (tests)
//	cuarray_copy_async(dst, src, stream)           queue a device copy on a stream handle
//	cuarray_dlpack_capsule(&desc, versioned, consumer)   __dlpack__ in C, no call into Go (capsule.c; ctypes.PyDLL)
//	cuarray_capsule_destructor                     for PyCapsule_New
//	cuarray_keep_hold(&desc, &k) / cuarray_keep_unhold(k)   hold the memory for an export that is no
//	                                               DLPack tensor (keep.c; no call into Go)
//	cuarray_keep_live(k, gen)                      how many tensors and holds use the memory a keep keeps
//	cuarray_export_token                           int64: changes on every free; odd while async work may be pending
//
// A message that starts with "device fault: " says that the device's
// context failed (device.ErrContextFailed: an illegal address, a failed
// launch): every later call on that device fails the same way, and on a
// GPU only a new process can use CUDA again. The prefix is the same on
// every backend, whatever the driver's own words.
//
// Every call not named async returns with its work complete on the device.
// Async work (cuarray_copy_async) is remembered by the memory it touches
// until it completes, and exports follow the stream rules instead of
// synchronizing the device: an array with nothing pending is handed over
// with no synchronization at all; otherwise the CUDA Array Interface names
// the stream to wait on (cuarray_export_stream), a DLPack consumer's
// stream waits on an event (consumer: a stream handle of the array's
// device, 1 and 2 for the default streams; -1: no synchronization; 0: the
// host waits), and synchronous calls, IPC and host-memory interfaces wait
// on the host. A consumer that caches an array's description
// (cuarray_describe) may export it again without a call while
// cuarray_export_token is unchanged and even. Each call restores the calling thread's current CUDA context
// before it returns (so does the deleter of a DLPack copy, copy=True; the
// deleter of every other DLPack tensor, and cuarray_dlpack_capsule, make
// no driver call: keep.c).
//
// Nothing a caller passes aborts the process: every pointer argument is
// checked (NULL is an error message); handles are numbers in a locked
// table, never reused, so a stale, foreign or concurrently released handle
// is an error, and two threads releasing one handle release it once; every
// import is checked against the allocation it claims (bounds.go: a live
// allocation of the device, or host memory the process has mapped with
// the access the import asks for). What the library cannot check is the
// caller's promise: a host buffer at least as long as the length given,
// a non-NULL pointer to what it claims to be (a DLPack tensor, a
// cuarray_desc), a tensor deleted once, and imported memory that stays
// allocated and accessible while it is used (a copy on the calling thread
// reports a fault there as an error; the device's own copies cannot).
package main

/*
#cgo LDFLAGS: -ldl
#include <stdint.h>
#include <stdlib.h>

#include "desc.h" // cuarray_desc: an array as cuarray_describe fills it in
*/
import "C"

import (
	"strings"
	"unsafe"
)

func main() {}

// result turns an error into the message C receives (NULL for none).
func result(err error) *C.char {
	if err == nil {
		return nil
	}
	return C.CString(message(err))
}

func putString(out **C.char, b []byte, err error) *C.char {
	if err != nil {
		return result(err)
	}
	*out = C.CString(string(b))
	return nil
}

// null returns the message for a NULL pointer argument of function fn,
// named in names (comma-separated, in order), or nil when none is NULL:
// every entry point checks its pointers, so a NULL never crashes the
// calling process.
func null(fn, names string, ptrs ...unsafe.Pointer) *C.char {
	for i, name := range strings.Split(names, ",") {
		if i < len(ptrs) && ptrs[i] == nil {
			return C.CString(fn + ": " + strings.TrimSpace(name) + " is NULL")
		}
	}
	return nil
}

//export cuarray_free_string
func cuarray_free_string(s *C.char) { C.free(unsafe.Pointer(s)) }

//export cuarray_device
func cuarray_device(spec *C.char, out *C.uint64_t) *C.char {
	if msg := null("cuarray_device", "spec, out", unsafe.Pointer(spec), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, err := openDevice(C.GoString(spec))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_empty
func cuarray_empty(dev C.uint64_t, dtype *C.char, ndim C.int, shape *C.int64_t, zero C.int, out *C.uint64_t) *C.char {
	if msg := null("cuarray_empty", "dtype, out", unsafe.Pointer(dtype), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	dims, err := dimsOf("cuarray_empty", ndim, shape)
	if err != nil {
		return result(err)
	}
	h, err := empty(uint64(dev), C.GoString(dtype), dims, zero != 0)
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_view
func cuarray_view(arr C.uint64_t, op *C.char, out *C.uint64_t) *C.char {
	if msg := null("cuarray_view", "op, out", unsafe.Pointer(op), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	h, err := view(uint64(arr), []byte(C.GoString(op)))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_release
func cuarray_release(arr C.uint64_t) *C.char {
	defer saveContext().restore()
	return result(releaseArray(uint64(arr)))
}

//export cuarray_copy
func cuarray_copy(dst, src C.uint64_t) *C.char {
	defer saveContext().restore()
	return result(copyArrays(uint64(dst), uint64(src)))
}

//export cuarray_copy_async
func cuarray_copy_async(dst, src C.uint64_t, stream C.uintptr_t) *C.char {
	defer saveContext().restore()
	return result(copyAsync(uint64(dst), uint64(src), uintptr(stream)))
}

//export cuarray_to_host
func cuarray_to_host(arr C.uint64_t, p unsafe.Pointer, n C.int64_t) *C.char {
	defer saveContext().restore()
	return result(copyHost(uint64(arr), p, int64(n), false))
}

//export cuarray_from_host
func cuarray_from_host(arr C.uint64_t, p unsafe.Pointer, n C.int64_t) *C.char {
	defer saveContext().restore()
	return result(copyHost(uint64(arr), p, int64(n), true))
}

//export cuarray_info
func cuarray_info(arr C.uint64_t, out **C.char) *C.char {
	if msg := null("cuarray_info", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	b, err := info(uint64(arr))
	return putString(out, b, err)
}

//export cuarray_describe
func cuarray_describe(arr C.uint64_t, out *C.cuarray_desc) *C.char {
	if msg := null("cuarray_describe", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	d, err := describe(uint64(arr))
	if err != nil {
		return result(err)
	}
	d.fill(out)
	return nil
}

// putChars writes s, cut to fit, NUL-terminated, into a fixed C array.
func putChars(dst []C.char, s string) {
	n := min(len(s), len(dst)-1)
	for i := range n {
		dst[i] = C.char(s[i])
	}
	dst[n] = 0
}

//export cuarray_alive
func cuarray_alive(arr C.uint64_t) *C.char {
	_, err := live(uint64(arr))
	return result(err)
}

//export cuarray_interface
func cuarray_interface(arr C.uint64_t, stream C.uintptr_t, host C.int, out **C.char) *C.char {
	if msg := null("cuarray_interface", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	b, err := exportCAI(uint64(arr), uintptr(stream), host != 0)
	return putString(out, b, err)
}

//export cuarray_export_stream
func cuarray_export_stream(arr C.uint64_t, out *C.uintptr_t) *C.char {
	if msg := null("cuarray_export_stream", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	s, err := exportStream(uint64(arr))
	*out = C.uintptr_t(s)
	return result(err)
}

//export cuarray_export_wait
func cuarray_export_wait(arr C.uint64_t, consumer C.int64_t) *C.char {
	defer saveContext().restore()
	_, err := exportWait(uint64(arr), int64(consumer))
	return result(err)
}

//export cuarray_import_interface
func cuarray_import_interface(dev C.uint64_t, js *C.char, out *C.uint64_t) *C.char {
	if msg := null("cuarray_import_interface", "json, out", unsafe.Pointer(js), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, err := importCAI(uint64(dev), []byte(C.GoString(js)))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_to_dlpack
func cuarray_to_dlpack(arr C.uint64_t, versioned, copied C.int, out *unsafe.Pointer) *C.char {
	if msg := null("cuarray_to_dlpack", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	t, err := toDLPack(uint64(arr), versioned != 0, copied != 0, consumerHost)
	*out = t
	return result(err)
}

//export cuarray_export_dlpack
func cuarray_export_dlpack(arr C.uint64_t, versioned, copied C.int, consumer C.int64_t, out *unsafe.Pointer) *C.char {
	if msg := null("cuarray_export_dlpack", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	t, err := toDLPack(uint64(arr), versioned != 0, copied != 0, int64(consumer))
	*out = t
	return result(err)
}

//export cuarray_from_dlpack
func cuarray_from_dlpack(dev C.uint64_t, t unsafe.Pointer, versioned C.int, out *C.uint64_t) *C.char {
	if msg := null("cuarray_from_dlpack", "tensor, out", unsafe.Pointer(t), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, err := fromDLPack(uint64(dev), t, versioned != 0)
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_dlpack_delete
func cuarray_dlpack_delete(t unsafe.Pointer, versioned C.int) {
	defer saveContext().restore()
	if versioned != 0 {
		deleteDLPack(t)
	} else {
		deleteDLPackLegacy(t)
	}
}

//export cuarray_ledger
func cuarray_ledger(dev C.uint64_t, out **C.char) *C.char {
	if msg := null("cuarray_ledger", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	b, err := ledgerJSON(uint64(dev))
	return putString(out, b, err)
}

//export cuarray_ledger_report
func cuarray_ledger_report(dev C.uint64_t, out **C.char) *C.char {
	if msg := null("cuarray_ledger_report", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	b, err := ledgerReport(uint64(dev))
	return putString(out, b, err)
}

//export cuarray_device_info
func cuarray_device_info(dev C.uint64_t, out **C.char) *C.char {
	if msg := null("cuarray_device_info", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	b, err := deviceInfo(uint64(dev))
	return putString(out, b, err)
}

//export cuarray_array_device
func cuarray_array_device(arr C.uint64_t, out *C.uint64_t) *C.char {
	if msg := null("cuarray_array_device", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	e, err := arrayOf(uint64(arr))
	if err == nil && e.dev != nil {
		*out = C.uint64_t(deviceHandle(e.dev))
	}
	return result(err)
}

//export cuarray_ipc_export
func cuarray_ipc_export(arr C.uint64_t, out **C.char) *C.char {
	if msg := null("cuarray_ipc_export", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	b, err := ipcExport(uint64(arr))
	return putString(out, b, err)
}

//export cuarray_ipc_open
func cuarray_ipc_open(dev C.uint64_t, js *C.char, out *C.uint64_t) *C.char {
	if msg := null("cuarray_ipc_open", "descriptor, out", unsafe.Pointer(js), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, err := ipcOpen(uint64(dev), []byte(C.GoString(js)))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_stream_new
func cuarray_stream_new(dev C.uint64_t, out *C.uint64_t, handle *C.uintptr_t) *C.char {
	if msg := null("cuarray_stream_new", "out, handle", unsafe.Pointer(out), unsafe.Pointer(handle)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	h, s, err := newStream(uint64(dev))
	*out, *handle = C.uint64_t(h), C.uintptr_t(s)
	return result(err)
}

//export cuarray_stream_synchronize
func cuarray_stream_synchronize(s C.uint64_t) *C.char {
	defer saveContext().restore()
	return result(syncStream(uint64(s)))
}

//export cuarray_stream_release
func cuarray_stream_release(s C.uint64_t) *C.char {
	defer saveContext().restore()
	return result(releaseStream(uint64(s)))
}

//export cuarray_stream_hold
func cuarray_stream_hold(s C.uint64_t, out *C.uint64_t) *C.char {
	if msg := null("cuarray_stream_hold", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	h, err := holdStream(uint64(s))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_stream_resume
func cuarray_stream_resume(r C.uint64_t) *C.char { return result(resumeStream(uint64(r))) }
