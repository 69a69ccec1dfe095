package devarray

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// PageableBackend is a Backend whose kernels may read and write the
// program's pageable host memory in place, by its host address, where the
// device can (HMM, ATS): every device.Device is one, and refuses where its
// device cannot.
type PageableBackend interface {
	Backend
	// UsePageable returns the address at which the device's kernels reach
	// b in place, or an error wrapping ErrNoPageableAccess where they
	// cannot. b stays where it is until ReleasePageable.
	UsePageable(b []byte) (Ptr, error)
	// ReleasePageable ends a UsePageable of the same b.
	ReleasePageable(b []byte) error
}

// pinnedPageable holds the runtime.Pinner of every live FromPageable
// array until its Free, so that a pinner still pinning is never collected
// (the runtime treats that as a fatal leak) when the program drops the
// array without freeing it: the slice then stays pinned, and in use by
// the device, until the process ends.
var pinnedPageable sync.Map // *buffer → *runtime.Pinner

// FromPageable returns a C-contiguous array of the elements of host, a Go
// slice, in place: the array's pointer is the slice's host address, and
// the device's kernels read and write the slice itself, no copy, on a
// device with pageable memory access (driver.PageableAccess: HMM on Linux
// with the open kernel modules, ATS on Grace Hopper). On any other device
// it is an error wrapping ErrNoPageableAccess: copy the data (FromHost),
// or use page-locked mapped memory (package pinned) or managed memory
// (EmptyManaged). The shape defaults to one dimension of len(host);
// otherwise its product must equal len(host).
//
// The slice is pinned (runtime.Pinner) until Free, so the garbage
// collector neither moves nor frees it while the device may use it; Free
// unpins it and leaves it the program's. The array borrows the memory: the
// ledger counts no allocation, and the bytes kernels move across the host
// link are recorded by whoever moves them (on accounting.PathPageable).
// The host and the device's work must not touch the same bytes at once:
// synchronize before the host reads what a kernel wrote.
func FromPageable[T Element](b Backend, host []T, shape ...int) (*DevArray, error) {
	return FromPageableBytes(b, AsBytes(host), DTypeOf[T](), defaultShape(shape, len(host))...)
}

// FromPageableBytes is FromPageable for host memory given as bytes, the
// packed elements of dtype: its address must be a multiple of the dtype's
// alignment (DType.Align), else the error wraps ErrMisaligned, as a
// kernel's load of such an element faults on a GPU.
func FromPageableBytes(b Backend, host []byte, dtype DType, shape ...int) (*DevArray, error) {
	if b == nil {
		return nil, fmt.Errorf("devarray: from pageable: %w", ErrNoBackend)
	}
	pb, ok := b.(PageableBackend)
	if !ok {
		return nil, fmt.Errorf("devarray: from pageable: backend %T cannot use host memory in place: %w", b, ErrNoPageableAccess)
	}
	if !dtype.Valid() {
		return nil, fmt.Errorf("devarray: from pageable: %v: %w", dtype, ErrDType)
	}
	lay, err := newLayout(shape, nil, dtype.Size())
	if err != nil {
		return nil, fmt.Errorf("devarray: from pageable: %w", err)
	}
	want := lay.size * dtype.Size()
	if want == 0 || int64(len(host)) != want {
		return nil, fmt.Errorf("devarray: from pageable: %d bytes for %v %v, which needs %d (and an empty slice has no memory to use in place): %w",
			len(host), shape, dtype, want, ErrHostSize)
	}
	addr := Ptr(uintptr(unsafe.Pointer(unsafe.SliceData(host))))
	if align := dtype.Align(); int64(addr)%align != 0 {
		return nil, fmt.Errorf("devarray: from pageable: %v at %v: the address must be a multiple of its alignment, %d bytes: %w", dtype, addr, align, ErrMisaligned)
	}
	pinner := new(runtime.Pinner)
	pinner.Pin(unsafe.SliceData(host))
	p, err := pb.UsePageable(host)
	if err != nil {
		pinner.Unpin()
		return nil, fmt.Errorf("devarray: from pageable %v %v (%d bytes): %w", shape, dtype, want, err)
	}
	buf := &buffer{backend: b, device: b.DeviceID(), base: p, size: want, pageable: true}
	buf.release = func() error {
		err := pb.ReleasePageable(host)
		pinner.Unpin()
		pinnedPageable.Delete(buf)
		return err
	}
	pinnedPageable.Store(buf, pinner)
	return &DevArray{buf: buf, lay: lay, dtype: dtype}, nil
}

// Pageable reports whether the array is the program's pageable host
// memory used in place (FromPageable).
func (a *DevArray) Pageable() bool {
	return a != nil && a.buf != nil && a.buf.pageable
}

// SharesHost reports whether the array is pageable memory used in place
// (FromPageable) whose elements' bytes share an address with host, an
// array of host memory of n bytes at its first byte: a copy between the
// two would read what it writes.
func (a *DevArray) SharesHost(host uintptr, n int64) bool {
	if !a.Pageable() || n <= 0 {
		return false
	}
	lo, hi := a.Extent()
	p := uint64(a.Ptr())
	dlo, dhi := p+uint64(lo), p+uint64(hi)
	hlo, hhi := uint64(host), uint64(host)+uint64(n)
	return dlo < dhi && dlo < hhi && hlo < dhi
}
