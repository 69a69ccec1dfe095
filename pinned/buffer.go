package pinned

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Flags select the kind of page-locked memory, as cuMemHostAlloc's do.
type Flags = driver.HostFlags

// The allocation flags.
const (
	Portable      = driver.Portable      // usable from every context (CU_MEMHOSTALLOC_PORTABLE)
	Mapped        = driver.Mapped        // mapped into the device's address space (CU_MEMHOSTALLOC_DEVICEMAP)
	WriteCombined = driver.WriteCombined // write-combined: fast for the device to read, slow for the CPU to read
)

// Buffer is page-locked host memory of one device: allocated (Alloc),
// registered (Register) or taken from a Pool. Its memory is not Go heap
// memory (unless registered from it) and stays put until Free. A Buffer is
// safe for concurrent use; the bytes in it are the caller's to order.
//
// The device's Close frees the memory of every buffer still allocated on
// it. From then on the buffer counts as freed: Bytes and the typed slices
// return nil, HostPtr 0, and every method that returns an error returns
// one wrapping ErrClosed (Free too, every time: the memory went with the
// device, not with Free). A slice taken from Bytes before the Close must
// not be used after it, as after Free. The methods of a nil or zero
// Buffer return ErrNil, nil slices and zero values; they never panic.
type Buffer struct {
	dev        driver.Device
	mem        *driver.HostMem
	n          int64 // bytes the user asked for; the pool's class may be larger
	registered bool
	pinner     *runtime.Pinner // registered Go memory, pinned while registered
	pool       *Pool

	mu      sync.Mutex
	dead    error // nil while usable; ErrFreed after Free, errDeviceClosed once the device was closed
	pending []Pending
}

// Alloc allocates n bytes of page-locked host memory on dev with the given
// flags (cuMemHostAlloc). A Mapped request on a context that cannot map
// host memory fails with ErrNotMapped; it never falls back.
func Alloc(dev driver.Device, n int64, flags Flags) (*Buffer, error) {
	if dev == nil {
		return nil, fmt.Errorf("pinned: alloc: no device: %w", driver.ErrInvalidValue)
	}
	if n <= 0 {
		return nil, fmt.Errorf("pinned: alloc %d bytes: want a positive size: %w", n, driver.ErrInvalidValue)
	}
	if flags&^(Portable|Mapped|WriteCombined) != 0 {
		return nil, fmt.Errorf("pinned: alloc: flags %v: want Portable, Mapped and WriteCombined only: %w", flags, driver.ErrInvalidValue)
	}
	if flags&Mapped != 0 && !dev.Info().CanMapHost {
		return nil, fmt.Errorf("pinned: alloc with flag Mapped on %v (context flags %q): %w", dev.DeviceID(), dev.Info().ContextFlags, ErrNotMapped)
	}
	mem, err := dev.HostAlloc(n, flags)
	if err != nil {
		return nil, fmt.Errorf("pinned: alloc %d bytes (%v): %w", n, flags, err)
	}
	return &Buffer{dev: dev, mem: mem, n: n}, nil
}

// Len returns the buffer's size in bytes (0 for a nil or zero Buffer).
func (b *Buffer) Len() int64 {
	if b.valid() != nil {
		return 0
	}
	return b.n
}

// Flags returns the flags the buffer was allocated or registered with.
func (b *Buffer) Flags() Flags {
	if b.valid() != nil {
		return 0
	}
	return b.mem.Flags
}

// Device returns the device the buffer belongs to (nil for a nil Buffer).
func (b *Buffer) Device() driver.Device {
	if b == nil {
		return nil
	}
	return b.dev
}

// Registered reports whether the buffer is memory the program had, page-locked by Register.
func (b *Buffer) Registered() bool { return b != nil && b.registered }

// Err returns nil while the buffer's memory may be used: ErrFreed once it
// was freed, an error wrapping ErrClosed once its device was closed,
// ErrNil for a nil or zero Buffer.
func (b *Buffer) Err() error {
	if err := b.valid(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.aliveLocked()
}

// Bytes returns the buffer's memory; nil once it was freed or its device
// was closed, and for a nil or zero Buffer.
func (b *Buffer) Bytes() []byte {
	if b.valid() != nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.aliveLocked() != nil {
		return nil
	}
	return b.mem.Bytes[:b.n:b.n]
}

// Slice returns the buffer's memory as a slice of T, as many whole
// elements as fit; nil once the buffer was freed or its device closed.
func Slice[T devarray.Element](b *Buffer) []T {
	bs := b.Bytes()
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(bs) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(bs))), len(bs)/size)
}

// Float32 returns the buffer's memory as float32s.
func (b *Buffer) Float32() []float32 { return Slice[float32](b) }

// Float64 returns the buffer's memory as float64s.
func (b *Buffer) Float64() []float64 { return Slice[float64](b) }

// Int32 returns the buffer's memory as int32s.
func (b *Buffer) Int32() []int32 { return Slice[int32](b) }

// Int64 returns the buffer's memory as int64s.
func (b *Buffer) Int64() []int64 { return Slice[int64](b) }

// Uint16 returns the buffer's memory as uint16s (float16 and bfloat16 bits).
func (b *Buffer) Uint16() []uint16 { return Slice[uint16](b) }

// Complex64 returns the buffer's memory as complex64s.
func (b *Buffer) Complex64() []complex64 { return Slice[complex64](b) }

// Mapped reports whether the device can reach the buffer in place.
func (b *Buffer) Mapped() bool { return b.Flags()&Mapped != 0 }

// DevPtr returns the device address of a mapped buffer
// (cuMemHostGetDevicePointer). A buffer that is not mapped returns ErrUnmapped.
func (b *Buffer) DevPtr() (devarray.Ptr, error) {
	if err := b.valid(); err != nil {
		return 0, fmt.Errorf("pinned: device pointer: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.aliveLocked(); err != nil {
		return 0, fmt.Errorf("pinned: device pointer: %w", err)
	}
	if b.mem.DevPtr == 0 {
		return 0, fmt.Errorf("pinned: device pointer of %v memory: %w", b.mem.Flags, ErrUnmapped)
	}
	return b.mem.DevPtr, nil
}

// HostPtr returns the address of the buffer's first byte; 0 once it was
// freed or its device was closed, and for a nil or zero Buffer.
func (b *Buffer) HostPtr() devarray.Ptr {
	if b.valid() != nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.aliveLocked() != nil {
		return 0
	}
	return devarray.Ptr(uintptr(unsafe.Pointer(unsafe.SliceData(b.mem.Bytes))))
}

// Array returns a view of the buffer as a C-contiguous array of dtype and
// shape, on device kind cuda_host (DLPack's kDLCUDAHost) with the device's
// ordinal: a descriptor to hand to other libraries. It borrows the memory,
// moves no data and must not outlive the buffer. The shape defaults to as
// many elements as fit; otherwise it must fit in the buffer.
func (b *Buffer) Array(dtype devarray.DType, shape ...int) (*devarray.DevArray, error) {
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("pinned: array: %w", err)
	}
	return b.view("array", b.HostPtr(), devarray.DeviceID{Kind: devarray.CUDAHost, Ordinal: b.dev.DeviceID().Ordinal}, nil, dtype, shape)
}

// DeviceArray returns a view of a mapped buffer at its device address, on
// the buffer's device, so that kernels read and write the host memory in
// place. A buffer that is not mapped returns ErrUnmapped. It must not
// outlive the buffer.
func (b *Buffer) DeviceArray(dtype devarray.DType, shape ...int) (*devarray.DevArray, error) {
	p, err := b.DevPtr()
	if err != nil {
		return nil, err
	}
	return b.view("device array", p, b.dev.DeviceID(), b.dev, dtype, shape)
}

func (b *Buffer) view(op string, p devarray.Ptr, id devarray.DeviceID, backend devarray.Backend, dtype devarray.DType, shape []int) (*devarray.DevArray, error) {
	if !dtype.Valid() {
		return nil, fmt.Errorf("pinned: %s: %v: %w", op, dtype, devarray.ErrDType)
	}
	if err := b.alive(); err != nil {
		return nil, fmt.Errorf("pinned: %s: %w", op, err)
	}
	if len(shape) == 0 {
		shape = []int{int(b.n / dtype.Size())}
	}
	if p == 0 {
		return nil, fmt.Errorf("pinned: %s: %w", op, ErrFreed) // freed meanwhile
	}
	a, err := devarray.Wrap(backend, devarray.Descriptor{Ptr: p, Shape: shape, DType: dtype, Device: id}, devarray.WithBounds(p, b.n))
	if err != nil {
		return nil, fmt.Errorf("pinned: %s: %w", op, err)
	}
	return a, nil
}

func (b *Buffer) alive() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.aliveLocked()
}

// valid returns ErrNil for a nil Buffer or one not made by this package.
func (b *Buffer) valid() error {
	if b == nil || b.dev == nil || b.mem == nil {
		return ErrNil
	}
	return nil
}

// aliveLocked returns nil while the buffer's memory may be used: its error
// once it was freed, and errDeviceClosed once its device was closed,
// which it then lets go of. The caller holds b.mu.
func (b *Buffer) aliveLocked() error {
	if b.dead == nil && deviceClosed(b.dev) {
		b.deviceClosedLocked()
	}
	return b.dead
}

// deviceClosedLocked marks the buffer as one whose device was closed: its
// memory is gone (the device's Close freed it), so nothing is freed here;
// registered Go memory is unpinned, a pool's buffer leaves the pool.
func (b *Buffer) deviceClosedLocked() {
	b.dead = errDeviceClosed
	b.pending = nil
	if b.registered {
		b.pinner.Unpin()
		registry.Delete(b)
	}
	if b.pool != nil {
		b.pool.put(b.mem, b.n, nil)
	}
}
