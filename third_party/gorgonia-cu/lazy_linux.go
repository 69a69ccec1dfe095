package cu

// cuarray's patch, not upstream's: see lazy_linux.c.

// #include <stdlib.h>
// int cuarray_cu_load(char *err, size_t n);
import "C"

import (
	"unsafe"
)

// loadDriver opens libcuda.so.1 (dlopen) and points the driver calls at it.
func loadDriver() error {
	buf := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(buf))
	if C.cuarray_cu_load(buf, 512) != 0 {
		return &LoadError{Msg: C.GoString(buf)}
	}
	return nil
}
