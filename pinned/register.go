package pinned

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/device/driver"
)

// registry holds every registered Buffer until it is unregistered, so that
// the runtime.Pinner of registered Go memory is never collected while it
// pins (the runtime treats that as a fatal leak) and the memory stays alive
// even if the caller drops the Buffer.
var registry sync.Map // *Buffer -> struct{}

// Register page-locks mem, memory the program already has, on dev
// (cuMemHostRegister): copies from it take the pinned path without a copy
// into a buffer of Alloc's first. Portable and Mapped are the flags that
// apply; with Mapped the device reaches the memory in place (DevPtr).
//
// Memory from mmap or C is registered as it is. Go heap memory is handled
// safely: it is pinned with runtime.Pinner until Unregister, so the garbage
// collector can neither free nor move it while the driver holds its
// address. The driver registers bytes: memory that shares a page but no
// byte with memory registered already registers (the H100 answered so),
// memory that shares bytes with it is refused (driver.ErrAlreadyLocked).
// Unregister (or Free) undoes it and leaves the memory the caller's.
func Register(dev driver.Device, mem []byte, flags Flags) (*Buffer, error) {
	if dev == nil {
		return nil, fmt.Errorf("pinned: register: no device: %w", driver.ErrInvalidValue)
	}
	if len(mem) == 0 || flags&^(Portable|Mapped) != 0 {
		return nil, fmt.Errorf("pinned: register %d bytes with flags %v: want memory, and only Portable or Mapped (WriteCombined needs Alloc): %w",
			len(mem), flags, driver.ErrInvalidValue)
	}
	if deviceClosed(dev) {
		return nil, fmt.Errorf("pinned: register: %w", ErrClosed)
	}
	if flags&Mapped != 0 && !dev.Info().CanMapHost {
		return nil, fmt.Errorf("pinned: register with flag Mapped on %v (context flags %q): %w", dev.DeviceID(), dev.Info().ContextFlags, ErrNotMapped)
	}
	pinner := new(runtime.Pinner)
	pinner.Pin(unsafe.SliceData(mem)) // a no-op for memory outside the Go heap
	h, err := dev.Register(mem, flags)
	if err != nil {
		pinner.Unpin()
		return nil, fmt.Errorf("pinned: register %d bytes: %w", len(mem), err)
	}
	b := &Buffer{dev: dev, mem: h, n: int64(len(mem)), registered: true, pinner: pinner}
	registry.Store(b, struct{}{})
	return b, nil
}

// Unregister undoes Register; it is Free under the name the driver uses.
// The memory stays the caller's. While an async copy still uses it,
// Unregister returns ErrBusy and changes nothing.
func (b *Buffer) Unregister() error {
	if err := b.valid(); err != nil {
		return fmt.Errorf("pinned: unregister: %w", err)
	}
	if !b.registered {
		return fmt.Errorf("pinned: unregister %v: allocated memory is freed with Free: %w", b, driver.ErrInvalidPointer)
	}
	return b.Free()
}
