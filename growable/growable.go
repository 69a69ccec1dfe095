// Package growable is a device array that grows in place: it reserves a
// range of device addresses as large as it may ever grow, and maps more
// physical memory into the range as it grows (CUDA's virtual memory
// management: cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess).
// Growing copies nothing and never moves the array: its address and its
// contents stay, as they do in PyTorch's expandable segments. The ledger
// shows the reserved range under the kind virtual-address, the memory
// under physical, and no device-to-device copy.
//
//	a, err := growable.New(dev, devarray.Float32, 1<<28) // room for 1 GiB
//	if err != nil { ... }
//	defer a.Free()
//	err = a.Grow(1 << 24) // 64 MiB mapped, the same address as before
//	v, err := a.DevArray() // the first Len() elements, a borrowed view
package growable

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
)

// ErrCapacity is returned by Grow past the capacity reserved.
var ErrCapacity = errors.New("the array cannot grow past its reserved capacity")

// ErrFreed is returned by a call on an array after Free.
var ErrFreed = errors.New("the array was freed")

// Array is a one-dimensional device array of one dtype that grows in
// place. Its methods are safe for concurrent use.
type Array struct {
	dev      device.Device
	dtype    devarray.DType
	base     devarray.Ptr
	reserved int64 // bytes of address space reserved
	chunk    int64 // bytes of physical memory each growth step maps, a multiple of the granularity

	mu     sync.Mutex
	chunks []device.PhysicalHandle // mapped from base on, chunk bytes each
	length int                     // elements in use
	freed  bool
}

// Option configures New.
type Option func(*config)

type config struct{ chunk int64 }

// ChunkBytes sets the physical memory each growth step maps (rounded up
// to the device's granularity): larger chunks mean fewer driver calls,
// smaller ones less memory held past the length. The default is the
// device's recommended granularity (2 MiB on an H100 and on sim).
func ChunkBytes(n int64) Option { return func(c *config) { c.chunk = n } }

// New reserves room for capacity elements of dtype on dev, with no memory
// behind it yet: Grow maps it.
func New(dev device.Device, dtype devarray.DType, capacity int, opts ...Option) (*Array, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if !dtype.Valid() || capacity <= 0 || cfg.chunk < 0 {
		return nil, fmt.Errorf("growable: new %v array of %d elements, chunks of %d bytes: %w", dtype, capacity, cfg.chunk, device.ErrInvalidValue)
	}
	g, err := dev.MemGranularity()
	if err != nil {
		return nil, fmt.Errorf("growable: new: %w", err)
	}
	chunk := roundUp(max(cfg.chunk, g.Recommended), g.Minimum)
	if int64(capacity) > (1<<62)/int64(dtype.Size()) {
		return nil, fmt.Errorf("growable: new: %d elements of %v: %w", capacity, dtype, device.ErrInvalidValue)
	}
	reserved := roundUp(int64(capacity)*int64(dtype.Size()), chunk)
	base, err := dev.ReserveAddress(reserved, 0)
	if err != nil {
		return nil, fmt.Errorf("growable: new: %w", err)
	}
	return &Array{dev: dev, dtype: dtype, base: base, reserved: reserved, chunk: chunk}, nil
}

func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// Ptr returns the array's device address, the same from New to Free.
func (a *Array) Ptr() devarray.Ptr { return a.base }

// DType returns the array's element type.
func (a *Array) DType() devarray.DType { return a.dtype }

// Len returns the elements in use.
func (a *Array) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.length
}

// Cap returns the elements the reserved range holds: how far the array
// can grow.
func (a *Array) Cap() int { return int(a.reserved / int64(a.dtype.Size())) }

// Mapped returns the bytes of physical memory mapped behind the array.
func (a *Array) Mapped() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int64(len(a.chunks)) * a.chunk
}

// Grow makes the array n elements long, mapping chunks of memory after
// those already mapped until n elements fit; the elements already there
// keep their place and their values; new ones hold whatever the memory
// held. A shorter n only shortens Len (the memory stays mapped). A
// failure half-way unmaps and releases the chunks this call mapped.
func (a *Array) Grow(n int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		return fmt.Errorf("growable: grow: %w", ErrFreed)
	}
	if n < 0 || n > a.Cap() {
		return fmt.Errorf("growable: grow to %d elements, room for %d: %w", n, a.Cap(), ErrCapacity)
	}
	want := roundUp(int64(n)*int64(a.dtype.Size()), a.chunk) / a.chunk
	had := len(a.chunks)
	for int64(len(a.chunks)) < want {
		if err := a.mapChunk(); err != nil {
			a.unmapFrom(had)
			return fmt.Errorf("growable: grow to %d elements: %w", n, err)
		}
	}
	a.length = n
	return nil
}

// mapChunk creates a chunk and maps it, accessible, after the mapped ones.
// a.mu is held.
func (a *Array) mapChunk() error {
	at := a.base + devarray.Ptr(int64(len(a.chunks))*a.chunk)
	h, err := driver.MapNew(a.dev, at, a.chunk)
	if err != nil {
		return err
	}
	a.chunks = append(a.chunks, h)
	return nil
}

// unmapFrom unmaps and releases the chunks from index i on, last first.
// a.mu is held.
func (a *Array) unmapFrom(i int) error {
	var errs []error
	for j := len(a.chunks) - 1; j >= i; j-- {
		at := a.base + devarray.Ptr(int64(j)*a.chunk)
		errs = append(errs, driver.UnmapRelease(a.dev, at, a.chunk, a.chunks[j]))
	}
	a.chunks = a.chunks[:i]
	return errors.Join(errs...)
}

// DevArray returns a view of the array's first Len elements, borrowing
// its memory: no allocation, no copy. The view keeps the length it was
// taken with; it is valid until Free.
func (a *Array) DevArray() (*devarray.DevArray, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		return nil, fmt.Errorf("growable: dev array: %w", ErrFreed)
	}
	d := devarray.Descriptor{Ptr: a.base, Shape: []int{a.length}, DType: a.dtype, Device: a.dev.DeviceID()}
	return devarray.Wrap(a.dev, d, devarray.WithBounds(a.base, int64(len(a.chunks))*a.chunk))
}

// Free unmaps and releases the array's memory and frees its address
// range. A second Free does nothing.
func (a *Array) Free() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		return nil
	}
	a.freed = true
	err := a.unmapFrom(0)
	return errors.Join(err, a.dev.FreeAddress(a.base, a.reserved))
}
