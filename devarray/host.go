package devarray

import (
	"errors"
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
//
// Making a view allocates nothing; reading a strided one may. A
// contiguous array, or a strided view that one pitched driver copy can
// move (see CopyTo), comes down with no device memory beyond its own. Any
// other view is first packed on the device into a temporary array of its
// size (NBytes): one more device allocation, freed before ToHost returns,
// and a pack kernel that the ledger records as a device-to-device copy on
// path kernel (a report's "DtoD kernel" row). On a device without room for
// the temporary, ToHost fails with an error wrapping the out-of-memory
// error, "devarray: temporary for a strided copy: ...". CopyFromHost and
// CopyFrom upload through the same temporary, unpacked by a kernel.
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

// CopyFromHost copies data, in C order, into a's elements (counted as a
// host-to-device copy): the typed counterpart of ToHost. T must match the
// array's DType and data must have exactly one element for each of a's;
// a may be a strided view, which receives only its own elements.
// Read-only arrays refuse it.
func CopyFromHost[T Element](a *DevArray, data []T) error {
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: copy from host: %w", err)
	}
	if want := DTypeOf[T](); want != a.dtype {
		return fmt.Errorf("devarray: copy from host: array holds %v, not %v: %w", a.dtype, want, ErrDType)
	}
	if int64(len(data)) != a.lay.size {
		return fmt.Errorf("devarray: copy from host: %d elements for an array %v of %d: %w", len(data), a.lay.shape, a.lay.size, ErrHostSize)
	}
	return a.CopyFrom(AsBytes(data))
}

// CopyTo copies the array's elements, packed in C order, into dst, which
// must hold exactly NBytes bytes. A strided view moves in one pitched
// driver copy where its layout allows, else in one pack kernel on the
// device into a temporary of NBytes bytes and one contiguous copy
// (StridedCopy), so only the elements' bytes cross to the host. The
// layout allows a pitched copy when PitchedPair finds one (in short: after
// dropping axes of length 1 and merging axes that are contiguous together,
// at most three remain, with positive strides and the innermost contiguous
// or one element wide) and its rows are at least MinPitchedWidth bytes
// wide or at most MaxNarrowRows in all: a block of columns of a matrix, a
// sub-volume of a volume. A transpose, or a column of a matrix of more
// than MaxNarrowRows rows, is packed. A three-axis copy needs a backend
// with Memcpy3D, as devices have; without it the view is packed.
// An array of pageable memory used in place (FromPageable) refuses host
// memory that shares its bytes: ErrSharesMemory.
func (a *DevArray) CopyTo(dst []byte) error {
	return a.move("copy to host", dst, false)
}

// CopyFrom copies packed C-order bytes from src, exactly NBytes of them, into
// the array's elements. Read-only arrays refuse it (ErrReadOnly), and an
// array of pageable memory used in place (FromPageable) refuses host
// memory that shares its bytes (ErrSharesMemory).
func (a *DevArray) CopyFrom(src []byte) error {
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: copy from host: %w", err)
	}
	if a.readonly {
		return fmt.Errorf("devarray: copy from host: %w", ErrReadOnly)
	}
	return a.move("copy from host", src, true)
}

// move runs a host<->device copy of the array's elements while holding the
// buffer (as Use does), so the memory cannot be freed while bytes move.
func (a *DevArray) move(op string, host []byte, toDevice bool) error {
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: %s: %w", op, err)
	}
	if int64(len(host)) != a.NBytes() {
		return fmt.Errorf("devarray: %s: host buffer has %d bytes, array %v of %v needs %d: %w",
			op, len(host), a.lay.shape, a.dtype, a.NBytes(), ErrHostSize)
	}
	if len(host) > 0 && a.SharesHost(uintptr(unsafe.Pointer(unsafe.SliceData(host))), int64(len(host))) {
		return fmt.Errorf("devarray: %s: the host buffer and the pageable array used in place share memory (its slice's): copy through other memory: %w", op, ErrSharesMemory)
	}
	b := a.buf
	if b.backend == nil {
		return fmt.Errorf("devarray: %s: %w", op, ErrNoBackend)
	}
	if !b.acquire() {
		return fmt.Errorf("devarray: %s: %w", op, ErrFreed)
	}
	if a.lay.size == 0 {
		return releaseAll([]*buffer{b})
	}
	if err := a.strided(host, toDevice, b.backend); err != nil {
		return errors.Join(fmt.Errorf("devarray: %s: %w", op, err), releaseAll([]*buffer{b}))
	}
	return releaseAll([]*buffer{b})
}

// strided moves a's elements to or from the packed host bytes through
// StridedCopy with the backend's synchronous steps: one driver copy when
// a pitched copy can express the layout, else one pack kernel and one
// contiguous copy.
func (a *DevArray) strided(host []byte, toDevice bool, b Backend) error {
	h, err := NewHostStrided(host, 0, a.lay.shape, nil, a.dtype.Size())
	if err != nil {
		return err
	}
	steps := &backendSteps{b: b}
	err = StridedCopy(steps, a, h, toDevice)
	return errors.Join(err, steps.free())
}
