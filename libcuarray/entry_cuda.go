//go:build cuda

package main

/*
#include <stdint.h>
#include <stdlib.h>
char *cuarray_device(char *spec, uint64_t *out);
void cuarray_free_string(char *s);
*/
import "C"

import "unsafe"

// deviceFromC opens a device through the C entry point cuarray_device, on
// the calling thread, as a C caller does: the tests check what an entry
// point leaves current on its caller's thread.
func deviceFromC(spec string) (uint64, string) {
	cs := C.CString(spec)
	defer C.free(unsafe.Pointer(cs))
	var h C.uint64_t
	msg := C.cuarray_device(cs, &h)
	if msg == nil {
		return uint64(h), ""
	}
	defer C.cuarray_free_string(msg)
	return uint64(h), C.GoString(msg)
}
