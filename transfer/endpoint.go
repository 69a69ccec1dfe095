package transfer

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pinned"
)

// Side is where an endpoint's memory lives.
type Side uint8

// The sides of a copy.
const (
	OnDevice   Side = iota + 1 // device memory (a DevArray)
	InPinned                   // page-locked host memory (a pinned.Buffer)
	InPageable                 // ordinary Go memory
)

func (s Side) String() string {
	switch s {
	case OnDevice:
		return "device"
	case InPinned:
		return "pinned"
	case InPageable:
		return "pageable"
	}
	return "invalid"
}

// Endpoint is one side of a copy: a DevArray, a pinned buffer or a Go
// slice, seen as an array of a dtype, shape and byte strides. Make one
// with Dev, Pinned, Host or HostBytes; a bad endpoint carries its error to
// the copy that uses it. An endpoint holds its memory alive while a copy
// uses it.
type Endpoint struct {
	side Side
	arr  *devarray.DevArray // the array; for host memory a view without a backend over mem
	mem  []byte             // host memory, whole
	buf  *pinned.Buffer     // the pinned buffer, for InPinned
	err  error
}

// Dev is device memory: the array, with its own strides (use its views to
// copy part of it).
func Dev(a *devarray.DevArray) Endpoint {
	if a == nil {
		return Endpoint{err: fmt.Errorf("transfer: nil array: %w", driver.ErrInvalidValue)}
	}
	return Endpoint{side: OnDevice, arr: a}
}

// Host is pageable Go memory: s as a C-contiguous array of the given shape
// (default: one axis of len(s)).
func Host[T devarray.Element](s []T, shape ...int) Endpoint {
	if len(shape) == 0 {
		shape = []int{len(s)}
	}
	return HostBytes(devarray.AsBytes(s), devarray.DTypeOf[T](), shape...)
}

// HostBytes is pageable Go memory holding a C-contiguous array of dtype and
// shape (default: as many elements as fit).
func HostBytes(b []byte, dtype devarray.DType, shape ...int) Endpoint {
	return hostEndpoint(InPageable, b, nil, dtype, shape)
}

// Pinned is a pinned buffer holding a C-contiguous array of dtype and
// shape (default: as many elements as fit).
func Pinned(b *pinned.Buffer, dtype devarray.DType, shape ...int) Endpoint {
	if b == nil {
		return Endpoint{err: fmt.Errorf("transfer: nil pinned buffer: %w", driver.ErrInvalidValue)}
	}
	mem := b.Bytes()
	if mem == nil {
		err := b.Err() // freed, or its device closed
		if err == nil {
			err = pinned.ErrFreed
		}
		return Endpoint{err: fmt.Errorf("transfer: %w", err)}
	}
	return hostEndpoint(InPinned, mem, b, dtype, shape)
}

func hostEndpoint(side Side, mem []byte, buf *pinned.Buffer, dtype devarray.DType, shape []int) Endpoint {
	e := Endpoint{side: side, mem: mem, buf: buf}
	if !dtype.Valid() {
		e.err = fmt.Errorf("transfer: host memory of %v: %w", dtype, devarray.ErrDType)
		return e
	}
	if len(shape) == 0 {
		shape = []int{len(mem) / int(dtype.Size())}
	}
	if need, ok := packedBytes(shape, dtype); ok && need > int64(len(mem)) {
		e.err = fmt.Errorf("transfer: host side too small: %d bytes of %v memory, and an array %v of %v needs %d: %w",
			len(mem), side, shape, dtype, need, devarray.ErrBounds)
		return e
	}
	e.arr, e.err = e.view(0, shape, nil, dtype)
	return e
}

// packedBytes is the size of a C-contiguous array of shape and dtype, and
// false when a dimension is negative or the size overflows (the view's
// own checks say which).
func packedBytes(shape []int, dtype devarray.DType) (int64, bool) {
	n := dtype.Size()
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt64/int64(d) {
			return 0, false
		}
		n *= int64(d)
	}
	return n, true
}

// view describes host memory as an array whose element 0 is offset bytes
// into mem, checked to lie inside mem.
func (e Endpoint) view(offset int64, shape []int, strides []int64, dtype devarray.DType) (*devarray.DevArray, error) {
	base := devarray.Ptr(uintptr(unsafe.Pointer(unsafe.SliceData(e.mem))))
	kind := devarray.CPU
	if e.side == InPinned {
		kind = devarray.CUDAHost
	}
	if offset < 0 || offset > int64(len(e.mem)) {
		return nil, fmt.Errorf("transfer: offset %d outside %d bytes of host memory: %w", offset, len(e.mem), devarray.ErrBounds)
	}
	a, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: base + devarray.Ptr(offset), Shape: shape, Strides: strides, DType: dtype, Device: devarray.DeviceID{Kind: kind}},
		devarray.WithBounds(base, int64(len(e.mem))))
	if err != nil {
		return nil, fmt.Errorf("transfer: host memory: %w", err)
	}
	return a, nil
}

// Strided returns the host endpoint seen with element 0 at byte offset
// and the given byte strides (any sign), one per axis of its shape; every
// element must lie inside the memory. Device endpoints take their strides
// from their array: use its views instead.
func (e Endpoint) Strided(offset int64, strides ...int64) Endpoint {
	if e.err != nil {
		return e
	}
	if e.side == OnDevice {
		e.err = fmt.Errorf("transfer: strided: a device endpoint has its array's strides; use a view of the array: %w", driver.ErrInvalidValue)
		return e
	}
	e.arr, e.err = e.view(offset, e.arr.Shape(), strides, e.arr.DType())
	return e
}

// Side returns where the endpoint's memory lives.
func (e Endpoint) Side() Side { return e.side }

// Err returns the error the endpoint was made with, if any.
func (e Endpoint) Err() error { return e.err }

// nbytes returns the bytes of the endpoint's elements.
func (e Endpoint) nbytes() int64 { return e.arr.NBytes() }

// hostAt returns the host memory from off bytes after element 0 on.
func (e Endpoint) hostAt(off int64) []byte { return e.mem[e.zero()+off:] }

// zero returns the offset of element 0 from the start of the host memory.
func (e Endpoint) zero() int64 {
	return int64(uintptr(e.arr.Ptr()) - uintptr(unsafe.Pointer(unsafe.SliceData(e.mem))))
}

// contiguous reports whether the elements are C-contiguous.
func (e Endpoint) contiguous() bool { return e.arr.IsContiguous() }

// mapped reports whether the endpoint is a pinned buffer the device reaches in place.
func (e Endpoint) mapped() bool { return e.side == InPinned && e.buf.Mapped() }
