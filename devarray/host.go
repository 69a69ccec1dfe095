package devarray

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Element is a Go type that has a DType. Float16 and BFloat16 have no Go
// type; move them as bytes with FromBytes and CopyTo.
type Element interface {
	~bool | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64 | ~complex64 | ~complex128
}

var kindDTypes = map[reflect.Kind]DType{
	reflect.Bool: Bool, reflect.Int8: Int8, reflect.Int16: Int16, reflect.Int32: Int32, reflect.Int64: Int64,
	reflect.Uint8: Uint8, reflect.Uint16: Uint16, reflect.Uint32: Uint32, reflect.Uint64: Uint64,
	reflect.Float32: Float32, reflect.Float64: Float64, reflect.Complex64: Complex64, reflect.Complex128: Complex128,
}

// DTypeOf returns the DType of the Go element type T.
func DTypeOf[T Element]() DType { return kindDTypes[reflect.TypeFor[T]().Kind()] }

// AsBytes returns the bytes of s, sharing its memory.
func AsBytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// FromHost allocates a C-contiguous array on b and copies data into it
// (counted as a host-to-device copy by b's ledger). The shape defaults to
// one dimension of len(data); otherwise its product must equal len(data).
func FromHost[T Element](b Backend, data []T, shape ...int) (*DevArray, error) {
	return FromBytes(b, AsBytes(data), DTypeOf[T](), defaultShape(shape, len(data))...)
}

func defaultShape(shape []int, n int) []int {
	if len(shape) == 0 {
		return []int{n}
	}
	return shape
}

// FromBytes allocates a C-contiguous array of dtype and shape on b and copies
// the packed bytes of data into it. On failure nothing stays allocated.
func FromBytes(b Backend, data []byte, dtype DType, shape ...int) (*DevArray, error) {
	if !dtype.Valid() {
		return nil, fmt.Errorf("devarray: from host: %v: %w", dtype, ErrDType)
	}
	lay, err := newLayout(shape, nil, dtype.Size())
	if err != nil {
		return nil, fmt.Errorf("devarray: from host: %w", err)
	}
	if want := lay.size * dtype.Size(); int64(len(data)) != want {
		return nil, fmt.Errorf("devarray: from host: %d bytes for %v %v, which needs %d: %w", len(data), shape, dtype, want, ErrHostSize)
	}
	a, err := Empty(b, dtype, shape...)
	if err != nil {
		return nil, err
	}
	if err := a.CopyFrom(data); err != nil {
		return nil, joinFree(err, a)
	}
	return a, nil
}

// ToHost copies the array's elements to a new Go slice in C order (counted
// as a device-to-host copy). T must match the array's DType.
func ToHost[T Element](a *DevArray) ([]T, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: to host: %w", err)
	}
	if want := DTypeOf[T](); want != a.dtype {
		return nil, fmt.Errorf("devarray: to host: array holds %v, not %v: %w", a.dtype, want, ErrDType)
	}
	out := make([]T, a.lay.size)
	if err := a.CopyTo(AsBytes(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// CopyTo copies the array's elements, packed in C order, into dst, which
// must hold exactly NBytes bytes. A strided view is copied with pitched 2-D
// copies, so only the elements' bytes cross to the host.
func (a *DevArray) CopyTo(dst []byte) error {
	return a.move("copy to host", dst, false)
}

// CopyFrom copies packed C-order bytes from src, exactly NBytes of them, into
// the array's elements. Read-only arrays refuse it.
func (a *DevArray) CopyFrom(src []byte) error {
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: copy from host: %w", err)
	}
	if a.readonly {
		return fmt.Errorf("devarray: copy from host: %w", ErrReadOnly)
	}
	return a.move("copy from host", src, true)
}

// move runs a host<->device copy of the array's elements under the buffer's
// read lock, so the memory cannot be freed while bytes move.
func (a *DevArray) move(op string, host []byte, toDevice bool) error {
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: %s: %w", op, err)
	}
	if int64(len(host)) != a.NBytes() {
		return fmt.Errorf("devarray: %s: host buffer has %d bytes, array %v of %v needs %d: %w",
			op, len(host), a.lay.shape, a.dtype, a.NBytes(), ErrHostSize)
	}
	b := a.buf
	if b.backend == nil {
		return fmt.Errorf("devarray: %s: %w", op, ErrNoBackend)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.freed {
		return fmt.Errorf("devarray: %s: %w", op, ErrFreed)
	}
	if a.lay.size == 0 {
		return nil
	}
	if err := forEachRows(a, host, toDevice, b.backend); err != nil {
		return fmt.Errorf("devarray: %s: %w", op, err)
	}
	return nil
}

// forEachRows moves a's elements in as few copies as the layout allows:
// one per block of Blocks, a block of a single row through the plain 1-D
// copy.
func forEachRows(a *DevArray, host []byte, toDevice bool, b Backend) error {
	return Blocks(a.lay.shape, a.lay.strides, a.dtype.Size(), func(bl Block) error {
		dev := Place{Dev: a.Ptr() + Ptr(bl.Offset)}
		hst := Place{Host: host[bl.Packed : bl.Packed+bl.Width*bl.Height]}
		switch {
		case bl.Height == 1 && toDevice:
			return b.CopyHtoD(dev.Dev, hst.Host)
		case bl.Height == 1:
			return b.CopyDtoH(hst.Host, dev.Dev)
		case toDevice:
			return b.Memcpy2D(Memcpy2D{Dst: dev, Src: hst, DstPitch: bl.Pitch, SrcPitch: bl.Width, Width: bl.Width, Height: bl.Height})
		}
		return b.Memcpy2D(Memcpy2D{Dst: hst, Src: dev, DstPitch: bl.Width, SrcPitch: bl.Pitch, Width: bl.Width, Height: bl.Height})
	})
}
