package main

/*
#include <stdint.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
)

// cuarray_empty_async(s, "float32", ndim, shape, &arr): an uninitialised
// C-contiguous array from the device's default stream-ordered pool, in the
// order of the library's stream s (cuarray_stream_new): devarray.EmptyAsync.
// Work queued on s may use it at once. The allocation is pending work on
// s until it is seen complete, so its exports follow the stream rules as
// after cuarray_copy_async: CAI names s, a DLPack consumer's stream waits
// for it, a host consumer (NumPy on sim) waits for it. cuarray_release
// frees it in s's order: release the array before the stream.

//export cuarray_empty_async
func cuarray_empty_async(stream C.uint64_t, dtype *C.char, ndim C.int, shape *C.int64_t, out *C.uint64_t) *C.char {
	if msg := null("cuarray_empty_async", "dtype, out", unsafe.Pointer(dtype), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	defer saveContext().restore()
	dims, err := dimsOf("cuarray_empty_async", ndim, shape)
	if err != nil {
		return result(err)
	}
	h, err := emptyAsync(uint64(stream), C.GoString(dtype), dims)
	*out = C.uint64_t(h)
	return result(err)
}

// dimsOf reads a C shape of ndim dimensions for fn.
func dimsOf(fn string, ndim C.int, shape *C.int64_t) ([]int, error) {
	if ndim < 0 || ndim > 64 || (ndim > 0 && shape == nil) {
		return nil, errors.New(fn + ": ndim must be 0 to 64, with a shape array")
	}
	dims := make([]int, int(ndim))
	for i, n := range unsafe.Slice(shape, int(ndim)) {
		dims[i] = int(n)
	}
	return dims, nil
}

// emptyAsync is cuarray_empty_async in Go terms.
func emptyAsync(stream uint64, dtype string, shape []int) (uint64, error) {
	_ = reapKeeps() // memory DLPack consumers let go of is free again; an error there is not this allocation's
	defer publish()
	s, err := streamOf(stream)
	if err != nil {
		return 0, err
	}
	dt, err := devarray.ParseDType(dtype)
	if err != nil {
		return 0, err
	}
	a, err := devarray.EmptyAsync(s.dev, s.s, dt, shape...)
	if err != nil {
		return 0, err
	}
	if err := pending.Queued(s.dev, s.s, nil, a); err != nil {
		return 0, errors.Join(fmt.Errorf("empty async: %w", err), a.Free())
	}
	return newArray(a, s.dev), nil
}
