//go:build cgo

package main

/*
#include <stdlib.h>
#include "keep.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/interop"
)

// keep is an allocation's cuarray_keep (keep.h) and the generation it was
// handed out under: an array and its views share one. DLPack tensors of
// the array count themselves in it, in C, and their deleters count
// themselves out without calling Go; Go reads the count when the array is
// freed (releaseKeep) and drains the keeps whose last tensor went after
// that (reapKeeps).
type keep struct {
	k   *C.cuarray_keep
	gen uint32
}

// keeps holds, by keep, the Hold that keeps a freed array's memory for its
// DLPack tensors still alive. Releasing a keep and draining keeps happen
// under its lock, so a keep drained is never one whose Hold is not yet
// recorded.
var keeps = struct {
	sync.Mutex
	held map[*C.cuarray_keep]func() error
}{held: map[*C.cuarray_keep]func() error{}}

// errNoCMemory: C's malloc failed.
var errNoCMemory = errors.New("libcuarray: out of C memory")

// newKeep returns a fresh keep from the pool.
func newKeep() (keep, error) {
	var gen C.uint32_t
	k := C.cuarray_keep_new(&gen)
	if k == nil {
		return keep{}, fmt.Errorf("keep: %w", errNoCMemory)
	}
	return keep{k: k, gen: uint32(gen)}, nil
}

// releaseKeep frees a, the owner of the memory kept by kp: at once when no
// DLPack tensor or hold (cuarray_keep_hold) of it is alive, else once the
// last one is gone (the array holds the memory until reapKeeps sees the
// keep drained). Every later export of the array or its views is refused.
func releaseKeep(kp keep, a *devarray.DevArray) error {
	if kp.k == nil {
		return a.Free()
	}
	keeps.Lock()
	alive := C.cuarray_keep_release(kp.k)
	var errs []error
	if alive > 0 {
		release, err := a.Hold()
		if err != nil {
			errs = append(errs, err)
		} else {
			keeps.held[kp.k] = release
		}
	}
	keeps.Unlock()
	errs = append(errs, a.Free())
	if alive == 0 {
		C.cuarray_keep_recycle(kp.k)
	}
	return errors.Join(errs...)
}

// reapKeeps lets go of the memory of freed arrays whose last DLPack tensor
// was deleted since it last ran, and returns their keeps to the pool. With
// nothing drained it costs one atomic load. Entry points that count memory
// (release, allocation, the ledger) call it first. Freeing memory is a
// driver call: the calling thread's current context is saved and restored
// around it, as an entry point does (the ledger's make no other).
func reapKeeps() error {
	if atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&C.cuarray_keep_drained))) == nil {
		return nil
	}
	defer saveContext().restore()
	keeps.Lock()
	defer keeps.Unlock()
	var errs []error
	for k := C.cuarray_keep_drain(); k != nil; {
		next := k.next
		if release, ok := keeps.held[k]; ok {
			delete(keeps.held, k)
			errs = append(errs, release())
		}
		C.cuarray_keep_recycle(k)
		k = next
	}
	return errors.Join(errs...)
}

// keepTensors returns how many DLPack tensors and holds counted in kp are alive.
func keepTensors(kp keep) int {
	if kp.k == nil {
		return 0
	}
	return int(C.cuarray_keep_tensors(kp.k))
}

// keepExport builds a DLPack tensor of the described array in C (keep.c):
// the export the Python module makes without a call into Go, made here
// for a caller that came through the library.
func keepExport(d desc, versioned bool) (unsafe.Pointer, error) {
	if d.dlErr != nil {
		return nil, fmt.Errorf("export DLPack: %w", d.dlErr)
	}
	cd := newCDesc(d)
	defer freeCDesc(cd)
	return exportFrom(cd, versioned)
}

// newCDesc returns d as a cuarray_desc in C memory, which the caller frees
// with C.free (nil when out of C memory).
func newCDesc(d desc) *C.cuarray_desc {
	cd := (*C.cuarray_desc)(C.calloc(1, C.sizeof_cuarray_desc))
	if cd != nil {
		d.fill(cd)
	}
	return cd
}

// freeCDesc frees what newCDesc returned.
func freeCDesc(cd *C.cuarray_desc) { C.free(unsafe.Pointer(cd)) }

// exportFrom builds a DLPack tensor from a description in C memory, as
// cuarray_dlpack_capsule does from the one the Python module keeps.
func exportFrom(cd *C.cuarray_desc, versioned bool) (unsafe.Pointer, error) {
	if cd == nil {
		return nil, fmt.Errorf("export DLPack: %w", errNoCMemory)
	}
	v := C.int(0)
	if versioned {
		v = 1
	}
	var t unsafe.Pointer
	switch r := C.cuarray_keep_export(cd, v, &t); r {
	case C.CUARRAY_KEEP_OK:
		return t, nil
	case C.CUARRAY_KEEP_RELEASED:
		return nil, fmt.Errorf("export DLPack: %w", devarray.ErrFreed)
	case C.CUARRAY_KEEP_READ_ONLY:
		return nil, fmt.Errorf("export legacy DLPack: the array is read-only and the legacy ABI cannot say so (use the versioned one): %w", interop.ErrInterface)
	case C.CUARRAY_KEEP_NO_MEMORY:
		return nil, fmt.Errorf("export DLPack: %w", errNoCMemory)
	case C.CUARRAY_KEEP_TOO_MANY:
		return nil, fmt.Errorf("export DLPack: 2^31-1 tensors of the array are alive: %w", interop.ErrInterface)
	default:
		return nil, fmt.Errorf("export DLPack: result %d: the layout cannot be said in DLPack: %w", int(r), interop.ErrInterface)
	}
}

// keepOwns says whether a tensor was built by keepExport (its deleter is keep.c's).
func keepOwns(t unsafe.Pointer, versioned bool) bool {
	v := C.int(0)
	if versioned {
		v = 1
	}
	return C.cuarray_keep_owns(t, v) != 0
}
