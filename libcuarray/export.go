package main

/*
#include <stdint.h>

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
	return d, nil
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
// exportWait). A copy (DLPack's copy=True) is made once the pending work
// on the array is done, and needs no wait of the consumer's.
func toDLPack(h uint64, versioned, copied bool, consumer int64) (unsafe.Pointer, error) {
	var opts []interop.DLPackOption
	if copied {
		opts = append(opts, interop.DLPackCopy())
		consumer = consumerHost
	}
	e, err := exportWait(h, consumer)
	if err != nil {
		return nil, err
	}
	var t unsafe.Pointer
	if versioned {
		t, err = interop.ExportDLPack(e.arr, opts...)
	} else {
		t, err = interop.ExportDLPackLegacy(e.arr, opts...)
	}
	if err != nil {
		return nil, err
	}
	guardDeleter(t, versioned)
	return t, nil
}
