// Package dlpacktest builds DLPack managed tensors in C memory from Go
// values, any field set to anything, with a deleter that counts its calls
// instead of freeing: what the interop tests and fuzzers hand to the
// importers. (Test files cannot use cgo, so it lives here.)
package dlpacktest

/*
#cgo CFLAGS: -I${SRCDIR}/../..
#include <stdlib.h>
#include "dlpack.h"

typedef struct {
	DLManagedTensorVersioned v;
	DLManagedTensor l;
	int deleted;
} block;

static void count_versioned(DLManagedTensorVersioned *t) { ((block *)t->manager_ctx)->deleted++; }
static void count_legacy(DLManagedTensor *t) { ((block *)t->manager_ctx)->deleted++; }

static block *new_block(void) {
	block *b = calloc(1, sizeof(block));
	if (b == NULL) {
		return NULL;
	}
	b->v.manager_ctx = b;
	b->v.deleter = count_versioned;
	b->l.manager_ctx = b;
	b->l.deleter = count_legacy;
	return b;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Tensor is every field of a managed tensor. Shape and Strides nil give
// null pointers; otherwise they are copied to C arrays of their own length
// (which may differ from NDim: the importer must check NDim first).
type Tensor struct {
	Versioned            bool
	Major, Minor         uint32
	Flags                uint64
	DeviceType, DeviceID int32
	NDim                 int32
	Code, Bits           uint8
	Lanes                uint16
	Shape, Strides       []int64
	Data                 uintptr
	ByteOffset           uint64
}

// Built is a tensor in C memory.
type Built struct {
	b       *C.block
	arrays  []unsafe.Pointer
	Tensor  Tensor
	Pointer unsafe.Pointer // *DLManagedTensorVersioned or *DLManagedTensor
}

// Build puts t in C memory. Release it with Free.
func Build(t Tensor) (*Built, error) {
	b := C.new_block()
	if b == nil {
		return nil, errors.New("dlpacktest: out of C memory")
	}
	out := &Built{b: b, Tensor: t}
	dl := &b.l.dl_tensor
	out.Pointer = unsafe.Pointer(&b.l)
	if t.Versioned {
		b.v.version = C.DLPackVersion{major: C.uint32_t(t.Major), minor: C.uint32_t(t.Minor)}
		b.v.flags = C.uint64_t(t.Flags)
		dl = &b.v.dl_tensor
		out.Pointer = unsafe.Pointer(&b.v)
	}
	*(*uintptr)(unsafe.Pointer(&dl.data)) = t.Data
	dl.device = C.DLDevice{device_type: C.int32_t(t.DeviceType), device_id: C.int32_t(t.DeviceID)}
	dl.ndim = C.int32_t(t.NDim)
	dl.dtype = C.DLDataType{code: C.uint8_t(t.Code), bits: C.uint8_t(t.Bits), lanes: C.uint16_t(t.Lanes)}
	dl.shape = out.array(t.Shape)
	dl.strides = out.array(t.Strides)
	dl.byte_offset = C.uint64_t(t.ByteOffset)
	return out, nil
}

func (b *Built) array(xs []int64) *C.int64_t {
	if xs == nil {
		return nil
	}
	p := C.calloc(C.size_t(max(len(xs), 1)), 8)
	b.arrays = append(b.arrays, p)
	copy(unsafe.Slice((*int64)(p), len(xs)), xs)
	return (*C.int64_t)(p)
}

// Deleted returns how many times the tensor's deleter was called.
func (b *Built) Deleted() int { return int(b.b.deleted) }

// Free releases the C memory, deleter called or not.
func (b *Built) Free() {
	for _, p := range b.arrays {
		C.free(p)
	}
	C.free(unsafe.Pointer(b.b))
	b.b, b.arrays = nil, nil
}

// DeviceOf returns the device type and id of the versioned managed tensor
// at p (a producer's export).
func DeviceOf(p unsafe.Pointer) (deviceType, deviceID int32) {
	d := (*C.DLManagedTensorVersioned)(p).dl_tensor.device
	return int32(d.device_type), int32(d.device_id)
}
