package cu

// cuarray's patch, not upstream's: see lazy_linux.c.

// #include <stdlib.h>
// int cuarray_cu_load(char *err, size_t n);
// int cuarray_cu_count(void);
// const char *cuarray_cu_name(int i);
// void cuarray_cu_fill(int i, void *f);
// void cuarray_cu_fill_unimplemented(int i);
// const char *cuarray_cu_take_missing(void);
import "C"

import (
	"unsafe"
)

// linked is the driver that UseDriver named, or nil: Init then loads libcuda.so.1.
var linked func(symbol string) unsafe.Pointer

// unimplementedMark is what Unimplemented points at.
var unimplementedMark byte

// Unimplemented is what a resolve function given to UseDriver returns for a driver function its
// driver knows but does not implement: a call to it answers CUDA_ERROR_NOT_SUPPORTED, and
// TakeMissing, on the thread that made the call, names the function. It is never called.
func Unimplemented() unsafe.Pointer { return unsafe.Pointer(&unimplementedMark) }

// UseDriver makes Init take every driver function from resolve instead of
// loading libcuda.so.1: resolve is asked for each function by the symbol
// cuda.h names it with ("cuMemAlloc_v2", not "cuMemAlloc") and returns a C
// function of that signature, nil for one it lacks (the call then returns
// CUDA_ERROR_NOT_FOUND, as for a function the installed driver lacks), or
// Unimplemented() for one it does not implement (the call then returns
// CUDA_ERROR_NOT_SUPPORTED). It is for a driver linked into the program,
// such as cuarray's emulated driver, and must be called before Init, from a
// package init.
func UseDriver(resolve func(symbol string) unsafe.Pointer) { linked = resolve }

// loadDriver points the driver calls at the linked driver, or opens
// libcuda.so.1 (dlopen) and points them at it.
func loadDriver() error {
	if linked != nil {
		for i := C.int(0); i < C.cuarray_cu_count(); i++ {
			if f := linked(C.GoString(C.cuarray_cu_name(i))); f == Unimplemented() {
				C.cuarray_cu_fill_unimplemented(i)
			} else {
				C.cuarray_cu_fill(i, f)
			}
		}
		return nil
	}
	buf := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(buf))
	if C.cuarray_cu_load(buf, 512) != 0 {
		return &LoadError{Msg: C.GoString(buf)}
	}
	return nil
}

// TakeMissing returns the symbol of the driver function that the calling OS thread last called
// and the installed driver lacks (the call answered CUDA_ERROR_NOT_FOUND) or, for a driver
// linked into the program, does not implement (UseDriver's Unimplemented: the call answered
// CUDA_ERROR_NOT_SUPPORTED), or "" when there is none, and forgets it. Call it on the thread
// that made the call (runtime.LockOSThread), right after a call answered NotFound or
// NotSupported: it tells a missing function from the driver's own NotFound or NotSupported.
func TakeMissing() string {
	if s := C.cuarray_cu_take_missing(); s != nil {
		return C.GoString(s)
	}
	return ""
}
