//go:build cuda && cudaemu && linux

package emulated

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <stdlib.h>
void *cuemu_lookup(const char *name);
void *cuemu_refused(void);
int cuemu_implements(const char *name);
void *cuemu_lookup_more(const char *name);
*/
import "C"

import (
	"slices"
	"sync"
	"unsafe"
)

// asked holds every symbol the driver was asked for (Resolve), in order.
var (
	askedMu sync.Mutex
	asked   []string
)

// Resolve returns the emulated function of a driver symbol ("cuMemAlloc_v2")
// and true, nil and true for one the configuration says this driver lacks
// (lack=: the call answers CUDA_ERROR_NOT_FOUND, as for a symbol an older
// libcuda does not export), a function that answers CUDA_ERROR_INVALID_VALUE
// for one it says to refuse (refuse=), and nil and false for one the
// emulated driver does not implement: a binding makes that one answer
// CUDA_ERROR_NOT_SUPPORTED and name itself (gorgonia.org/cu's
// Unimplemented). The package binds gorgonia.org/cu with it when imported
// (bind.go); a build with the tag cudaemu_nobind leaves that to its caller,
// as the harness that runs upstream gorgonia.org/cu's tests does.
func Resolve(symbol string) (unsafe.Pointer, bool) {
	askedMu.Lock()
	if !slices.Contains(asked, symbol) {
		asked = append(asked, symbol)
	}
	askedMu.Unlock()
	if cfg, err := loadConfig(); err == nil {
		switch {
		case cfg.lack[symbol]:
			return nil, true
		case cfg.refuse[symbol]:
			return C.cuemu_refused(), true
		}
	}
	if !Implements(symbol) {
		return nil, false
	}
	s := C.CString(symbol)
	defer C.free(unsafe.Pointer(s))
	if f := C.cuemu_lookup_more(s); f != nil {
		return f, true
	}
	return C.cuemu_lookup(s), true
}

// Implements reports whether the emulated driver implements the driver
// function of that symbol ("cuMemAlloc_v2"); any other answers
// CUDA_ERROR_NOT_SUPPORTED.
func Implements(symbol string) bool {
	s := C.CString(symbol)
	defer C.free(unsafe.Pointer(s))
	return C.cuemu_implements(s) != 0 || C.cuemu_lookup_more(s) != nil
}

// Asked returns the driver symbols the emulated driver has been asked for
// (Resolve), in the order first asked: once gorgonia.org/cu's Init has run,
// every function its stubs call through.
func Asked() []string {
	askedMu.Lock()
	defer askedMu.Unlock()
	return slices.Clone(asked)
}
