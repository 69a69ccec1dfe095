//go:build cuda && cudaemu && linux

package emulated

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <stdlib.h>
void *cuemu_lookup(const char *name);
void *cuemu_refused(void);
int cuemu_implements(const char *name);
*/
import "C"

import (
	"unsafe"

	"gorgonia.org/cu"
)

// init makes gorgonia.org/cu's Init take the driver from this package.
func init() { cu.UseDriver(resolve) }

// resolve returns the emulated function of a driver symbol: nil for one
// the configuration says this driver lacks (the call then answers
// CUDA_ERROR_NOT_FOUND, as for a symbol an older libcuda does not export),
// a function that answers CUDA_ERROR_INVALID_VALUE for one it says to refuse.
func resolve(symbol string) unsafe.Pointer {
	if cfg, err := loadConfig(); err == nil {
		switch {
		case cfg.lack[symbol]:
			return nil
		case cfg.refuse[symbol]:
			return C.cuemu_refused()
		}
	}
	s := C.CString(symbol)
	defer C.free(unsafe.Pointer(s))
	return C.cuemu_lookup(s)
}

// Implements reports whether the emulated driver implements the driver
// function of that symbol ("cuMemAlloc_v2"); any other answers
// CUDA_ERROR_NOT_SUPPORTED.
func Implements(symbol string) bool {
	s := C.CString(symbol)
	defer C.free(unsafe.Pointer(s))
	return C.cuemu_implements(s) != 0
}
