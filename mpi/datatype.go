//go:build mpi

package mpi

// #include "binding.h"
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// datatype is one span of a buffer as MPI takes it: a count of a type,
// from the buffer's address plus disp (in bytes; 0 for a derived type,
// which holds its offset itself).
type datatype struct {
	t       C.MPI_Datatype
	count   int
	disp    int
	derived bool
}

// typeOf returns span s as MPI_BYTE with a count when it fits one chunk
// and its offset fits an int, else as a derived datatype (Split's layout)
// that the caller must free.
func typeOf(s Span, chunk int64) (datatype, error) {
	l, err := Split(s, chunk)
	if err != nil {
		return datatype{}, err
	}
	if !l.Derived() && s.Off <= MaxCount {
		return datatype{t: C.cu_byte(), count: int(l.Rest), disp: int(s.Off)}, nil
	}
	var t C.MPI_Datatype
	if err := check("MPI_Type_create_struct", C.cu_type_span(C.longlong(l.Off), C.int(l.Chunk), C.int(l.Chunks), C.int(l.Rest), &t)); err != nil {
		return datatype{}, err
	}
	return datatype{t: t, count: 1, derived: true}, nil
}

// free frees a derived datatype.
func (d *datatype) free() error {
	if !d.derived {
		return nil
	}
	d.derived = false
	return check("MPI_Type_free", C.cu_type_free(&d.t))
}

// freeAll frees derived datatypes.
func freeAll(ds []datatype) error {
	var errs []error
	for i := range ds {
		errs = append(errs, ds[i].free())
	}
	return errors.Join(errs...)
}

// goBytes returns the address of Go memory b for a C call, pinned until
// the returned func is called (0 for an empty b).
func goBytes(b []byte) (uintptr, func()) {
	if len(b) == 0 {
		return 0, func() {}
	}
	var p runtime.Pinner
	p.Pin(&b[0])
	return uintptr(unsafe.Pointer(&b[0])), p.Unpin
}

// typeInfo builds the derived datatype of span s in chunks of chunk bytes
// (as typeOf does for a span longer than a chunk) and returns what MPI
// says of it: its size in bytes, and its true lower bound and extent. It
// allocates no buffer, so a test can check a type of more than 2^31
// elements without 8 GiB of memory.
func typeInfo(s Span, chunk int64) (size, lb, extent int64, err error) {
	if err := ready("datatype"); err != nil {
		return 0, 0, 0, err
	}
	l, err := Split(s, chunk)
	if err != nil {
		return 0, 0, 0, err
	}
	var cs, clb, ce C.longlong
	calls.Lock()
	defer calls.Unlock()
	err = check("MPI_Type_create_struct", C.cu_type_span_info(C.longlong(l.Off), C.int(l.Chunk), C.int(l.Chunks), C.int(l.Rest), &cs, &clb, &ce))
	return int64(cs), int64(clb), int64(ce), err
}
