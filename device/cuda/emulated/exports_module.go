//go:build cuda && cudaemu && linux

package emulated

// The driver's entry points for modules from files, their variables and
// functions' attributes, and the linker (table_more.c maps them).

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdlib.h>
*/
import "C"

import "unsafe"

//export cuemu_cuModuleLoad
func cuemu_cuModuleLoad(m *C.CUmodule, fname *C.char) C.CUresult {
	if m == nil || fname == nil {
		return result("cuModuleLoad", errInvalidValue)
	}
	if _, _, r := current(); r != success {
		return result("cuModuleLoad", r)
	}
	h, r := moduleLoadFile(C.GoString(fname))
	if r == success {
		*m = C.CUmodule(cPointer(h))
	}
	return result("cuModuleLoad", r)
}

//export cuemu_cuModuleGetGlobal_v2
func cuemu_cuModuleGetGlobal_v2(dptr *C.CUdeviceptr, bytes *C.size_t, m C.CUmodule, name *C.char) C.CUresult {
	if name == nil {
		return result("cuModuleGetGlobal_v2", errInvalidValue)
	}
	addr, n, r := moduleGetGlobal(uintptr(unsafe.Pointer(m)), C.GoString(name))
	if r == success {
		if dptr != nil {
			*dptr = C.CUdeviceptr(addr)
		}
		if bytes != nil {
			*bytes = C.size_t(n)
		}
	}
	return result("cuModuleGetGlobal_v2", r)
}

//export cuemu_cuFuncGetAttribute
func cuemu_cuFuncGetAttribute(pi *C.int, attr C.CUfunction_attribute, f C.CUfunction) C.CUresult {
	if pi == nil {
		return result("cuFuncGetAttribute", errInvalidValue)
	}
	v, r := funcGetAttribute(uintptr(unsafe.Pointer(f)), int(attr))
	if r == success {
		*pi = C.int(v)
	}
	return result("cuFuncGetAttribute", r)
}

//export cuemu_cuLinkCreate_v2
func cuemu_cuLinkCreate_v2(n C.uint, opts *C.CUjit_option, vals *unsafe.Pointer, state *C.CUlinkState) C.CUresult {
	if state == nil || (n > 0 && (opts == nil || vals == nil)) {
		return result("cuLinkCreate_v2", errInvalidValue)
	}
	if _, _, r := current(); r != success {
		return result("cuLinkCreate_v2", r)
	}
	l := &linkState{}
	if n > 0 {
		o, v := unsafe.Slice(opts, int(n)), unsafe.Slice(vals, int(n))
		// The log buffers are the caller's until cuLinkDestroy: a failed
		// add writes its error there.
		l.errLog = func(s string) { writeJITLogs(o, v, s) }
	}
	*state = C.CUlinkState(cPointer(drv.newHandle(l)))
	return result("cuLinkCreate_v2", success)
}

//export cuemu_cuLinkAddData_v2
func cuemu_cuLinkAddData_v2(state C.CUlinkState, typ C.CUjitInputType, data unsafe.Pointer, size C.size_t, name *C.char, n C.uint, opts *C.CUjit_option, vals *unsafe.Pointer) C.CUresult {
	if data == nil || size == 0 {
		return result("cuLinkAddData_v2", errInvalidValue)
	}
	b := C.GoBytes(data, C.int(size))
	return result("cuLinkAddData_v2", linkAdd(uintptr(unsafe.Pointer(state)), int(typ), b))
}

//export cuemu_cuLinkAddFile_v2
func cuemu_cuLinkAddFile_v2(state C.CUlinkState, typ C.CUjitInputType, path *C.char, n C.uint, opts *C.CUjit_option, vals *unsafe.Pointer) C.CUresult {
	if path == nil {
		return result("cuLinkAddFile_v2", errInvalidValue)
	}
	b, r := readInput(C.GoString(path))
	if r != success {
		return result("cuLinkAddFile_v2", r)
	}
	return result("cuLinkAddFile_v2", linkAdd(uintptr(unsafe.Pointer(state)), int(typ), b))
}

//export cuemu_cuLinkComplete
func cuemu_cuLinkComplete(state C.CUlinkState, out *unsafe.Pointer, size *C.size_t) C.CUresult {
	if out == nil || size == nil {
		return result("cuLinkComplete", errInvalidValue)
	}
	image, r := linkComplete(uintptr(unsafe.Pointer(state)))
	if r == success {
		// The image is the link state's until cuLinkDestroy, as the
		// driver's is; it lives in C memory so that the caller may keep
		// the pointer.
		p := C.CBytes(image)
		linkKeep(uintptr(unsafe.Pointer(state)), p)
		*out, *size = p, C.size_t(len(image))
	}
	return result("cuLinkComplete", r)
}

//export cuemu_cuLinkDestroy
func cuemu_cuLinkDestroy(state C.CUlinkState) C.CUresult {
	h := uintptr(unsafe.Pointer(state))
	if l, ok := lookup[*linkState](h); ok {
		l.mu.Lock()
		if l.cImage != nil {
			C.free(l.cImage)
			l.cImage = nil
		}
		l.mu.Unlock()
	}
	return result("cuLinkDestroy", linkDestroy(h))
}

// freeC frees C memory the emulator handed out.
func freeC(p unsafe.Pointer) { C.free(p) }
