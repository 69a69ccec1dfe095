// Package cu provides an idiomatic interface to the CUDA Driver API.
package cu // import "gorgonia.org/cu"

// This file implements CUDA driver context management

//#include <cuda.h>
import "C"
import "sync"

const initHtml = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html"

var (
	initOnce sync.Once
	initErr  error
)

// Init initializes the CUDA driver (cuInit with flags 0, which must be 0) the first time it is
// called, and returns that call's result then and every later time. See initHtml.
//
// cuarray's patch: upstream calls cuInit in the package's init and exits the process when it
// fails, so a program that links this package cannot start on a machine without a GPU. Here
// nothing happens at start: on Linux the package is not even linked with libcuda, and Init
// loads it (a *LoadError when it cannot: lazy_linux.c). Call Init before any other driver call:
// one made before Init returns NotInitialized (Version returns -1).
func Init() error {
	initOnce.Do(func() {
		if initErr = loadDriver(); initErr == nil {
			initErr = result(C.cuInit(C.uint(0)))
		}
	})
	return initErr
}

// Version returns the version of the CUDA driver
func Version() int {
	var v C.int
	if err := result(C.cuDriverGetVersion(&v)); err != nil {
		return -1
	}
	return int(v)
}
