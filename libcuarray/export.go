package main

/*
#include <stdint.h>
#include "desc.h"

extern int64_t cuarray_export_token;
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/interop"
)

// pending is the async work queued through the library (cuarray_copy_async)
// and not yet seen complete, by the memory it touches. Exports apply the
// stream rules to it; synchronous calls wait for it on the arrays they use.
var pending interop.Pending

// token keeps cuarray_export_token: the number of frees, shifted left by
// one, with bit 0 set while pending work may remain.
var token struct {
	sync.Mutex
	frees int64
}

// publish writes the export token after a free or a change of the pending
// work; every change is followed by a publish, so the last one is current.
func publish() {
	token.Lock()
	defer token.Unlock()
	t := token.frees << 1
	if pending.Len() > 0 {
		t |= 1
	}
	atomic.StoreInt64((*int64)(unsafe.Pointer(&C.cuarray_export_token)), t)
}

// freed counts a free: cached descriptors are checked again before their
// next export.
func freed() {
	token.Lock()
	token.frees++
	token.Unlock()
	publish()
}

// settle has the host wait for the pending async work on the arrays'
// memory: synchronous calls and consumers without a stream see it done.
// With nothing pending it costs one atomic load.
func settle(arrays ...*devarray.DevArray) error {
	if pending.Len() == 0 {
		return nil
	}
	var errs []error
	for _, a := range arrays {
		errs = append(errs, pending.Wait(a))
	}
	publish()
	return errors.Join(errs...)
}

// live returns the entry behind h, and an error if its memory is gone.
func live(h uint64) (*entry, error) {
	e, err := arrayOf(h)
	if err != nil {
		return nil, err
	}
	if err := e.arr.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

// The flags of a cuarray_desc (main.go).
const (
	descReadOnly = 1 << iota
	descCContig
	descFContig
	descHostAccessible
	descOwned
	descView
)

// maxDims is CUARRAY_MAX_DIMS: the most axes a cuarray_desc holds.
const maxDims = 64

// desc is a cuarray_desc in Go's terms.
type desc struct {
	ptr                  uint64
	itemsize             int64
	extent               [2]int64
	flags                uint32
	dlDevice             [2]int32
	typestr, dtype, kind string
	device               string
	shape                []int
	strides              []int64
	keep                 keep   // the allocation's keep, for DLPack tensors built in C
	dlDType              [3]int // DLPack dtype: code, bits, lanes
	dlErr                error  // why DLPack cannot describe the array; nil if it can
}

// describe returns what the Python module reads of an array once: its
// layout, its dtype, its device.
func describe(h uint64) (desc, error) {
	e, err := live(h)
	if err != nil {
		return desc{}, err
	}
	a := e.arr
	if a.NDim() > maxDims {
		return desc{}, fmt.Errorf("describe: %d dimensions: at most %d: %w", a.NDim(), maxDims, devarray.ErrShape)
	}
	lo, hi := a.Extent()
	d := desc{
		ptr: uint64(a.Ptr()), itemsize: a.DType().Size(), extent: [2]int64{lo, hi},
		typestr: a.DType().Typestr(), dtype: a.DType().String(), kind: a.Device().Kind.String(), device: a.Device().String(),
		shape: a.Shape(), strides: a.Strides(),
	}
	for _, f := range []struct {
		on  bool
		bit uint32
	}{{a.ReadOnly(), descReadOnly}, {a.IsContiguous(), descCContig}, {a.IsFContiguous(), descFContig},
		{a.Device().Kind.HostAccessible(), descHostAccessible}, {a.Owned(), descOwned}, {a.IsView(), descView}} {
		if f.on {
			d.flags |= f.bit
		}
	}
	dl, err := a.Device().Kind.DLPack()
	if err != nil {
		dl = -1
	}
	d.dlDevice = [2]int32{dl, int32(a.Device().Ordinal)}
	d.keep = e.keep
	code, bits, lanes, dtErr := a.DType().DLPack()
	d.dlDType = [3]int{int(code), int(bits), int(lanes)}
	d.dlErr = errors.Join(err, dtErr, elementStrides(d.strides, d.itemsize))
	return d, nil
}

// elementStrides says why byte strides cannot be DLPack's element strides
// (a stride that is not a multiple of the element), or nil.
func elementStrides(strides []int64, item int64) error {
	for i, s := range strides {
		if item <= 0 || s%item != 0 {
			return fmt.Errorf("stride %d of axis %d is not a multiple of the %d-byte element, which DLPack's element strides cannot say: %w", s, i, item, interop.ErrInterface)
		}
	}
	return nil
}

// fill writes d into a cuarray_desc (desc.h).
func (d desc) fill(out *C.cuarray_desc) {
	*out = C.cuarray_desc{
		ptr: C.uint64_t(d.ptr), itemsize: C.int64_t(d.itemsize),
		extent: [2]C.int64_t{C.int64_t(d.extent[0]), C.int64_t(d.extent[1])},
		ndim:   C.int32_t(len(d.shape)), flags: C.uint32_t(d.flags),
		dl_device: [2]C.int32_t{C.int32_t(d.dlDevice[0]), C.int32_t(d.dlDevice[1])},
		keep:      unsafe.Pointer(d.keep.k), keep_gen: C.uint32_t(d.keep.gen),
		dl_code: C.uint8_t(d.dlDType[0]), dl_bits: C.uint8_t(d.dlDType[1]), dl_lanes: C.uint16_t(d.dlDType[2]),
	}
	if d.dlErr == nil {
		out.dl_ok = 1
	}
	putChars(out.typestr[:], d.typestr)
	putChars(out.dtype[:], d.dtype)
	putChars(out.kind[:], d.kind)
	putChars(out.device[:], d.device)
	for i, n := range d.shape {
		out.shape[i] = C.int64_t(n)
		out.strides[i] = C.int64_t(d.strides[i])
	}
}

// exportStream returns the stream a CUDA Array Interface export of the
// array names: that of the pending work on its memory, 0 for none.
func exportStream(h uint64) (uintptr, error) {
	e, err := live(h)
	if err != nil {
		return 0, err
	}
	s, err := pending.ExportStream(e.arr)
	publish()
	return s, err
}

// The consumer argument of exportWait and the DLPack exports: a stream
// handle of the array's device (1, 2, a stream), or one of these.
const (
	consumerHost   = 0  // a consumer without a stream: the host waits
	consumerNoSync = -1 // DLPack's stream=-1: no synchronization at all
)

// exportWait readies the array for a consumer: the consumer's stream waits
// on the device for the pending work on its memory, or the host does
// (consumerHost), or nothing does (consumerNoSync). With nothing pending it
// only checks that the array is alive.
func exportWait(h uint64, consumer int64) (*entry, error) {
	e, err := live(h)
	if err != nil {
		return nil, err
	}
	if consumer < consumerNoSync {
		return nil, fmt.Errorf("export: stream %d: want -1, a stream handle, or none: %w", consumer, interop.ErrInterface)
	}
	if consumer == consumerNoSync || pending.Len() == 0 {
		return e, nil
	}
	if consumer == consumerHost {
		err = pending.Wait(e.arr)
	} else {
		err = pending.WaitOn(e.arr, uintptr(consumer))
	}
	publish()
	return e, err
}

func exportCAI(h uint64, stream uintptr, hostInterface bool) ([]byte, error) {
	if hostInterface {
		e, err := exportWait(h, consumerHost)
		if err != nil {
			return nil, err
		}
		m, err := interop.ExportArrayInterface(e.arr)
		if err != nil {
			return nil, err
		}
		return json.Marshal(m)
	}
	e, err := live(h)
	if err != nil {
		return nil, err
	}
	s, err := exportStream(h)
	if err != nil {
		return nil, err
	}
	if s == 0 {
		s = stream
	}
	return interop.MarshalCAI(e.arr, s)
}

// toDLPack exports an array as a DLPack tensor for a consumer (see
// exportWait). The tensor is built in C on the array's keep (keepExport),
// so its deleter calls no Go and no driver. A copy (DLPack's copy=True) is
// made once the pending work on the array is done, and needs no wait of
// the consumer's; its tensor is interop's, whose deleter frees the copy.
func toDLPack(h uint64, versioned, copied bool, consumer int64) (unsafe.Pointer, error) {
	if copied {
		return copyToDLPack(h, versioned)
	}
	if _, err := exportWait(h, consumer); err != nil {
		return nil, err
	}
	d, err := describe(h)
	if err != nil {
		return nil, err
	}
	if d.keep.k == nil {
		return nil, fmt.Errorf("export DLPack: no keep for the array: %w", errNoCMemory)
	}
	return keepExport(d, versioned)
}

// copyToDLPack exports a new copy of the array (DLPack's copy=True).
func copyToDLPack(h uint64, versioned bool) (unsafe.Pointer, error) {
	_ = reapKeeps() // the copy is an allocation: as empty, an error there is not this export's
	e, err := exportWait(h, consumerHost)
	if err != nil {
		return nil, err
	}
	var t unsafe.Pointer
	if versioned {
		t, err = interop.ExportDLPack(e.arr, interop.DLPackCopy())
	} else {
		t, err = interop.ExportDLPackLegacy(e.arr, interop.DLPackCopy())
	}
	if err != nil {
		return nil, err
	}
	guardDeleter(t, versioned)
	return t, nil
}
