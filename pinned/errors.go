package pinned

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
)

var (
	// ErrBusy means an async copy still uses the buffer; wait for it
	// (Op.Wait in package transfer, or the stream) before freeing.
	ErrBusy = errors.New("pinned buffer still in use by an async copy")
	// ErrFreed means the buffer was freed or unregistered.
	ErrFreed = errors.New("pinned buffer was freed")
	// ErrInUse means a pool still has buffers handed out.
	ErrInUse = errors.New("pinned pool has buffers in use")
	// ErrUnmapped means the buffer has no device address: it was not
	// allocated or registered with Mapped.
	ErrUnmapped = errors.New("pinned buffer is not mapped into the device (allocate or register it with Mapped)")
	// ErrNotMapped means the context cannot map host memory at all (no
	// CU_CTX_MAP_HOST); it is driver.ErrNotMapped.
	ErrNotMapped = driver.ErrNotMapped
	// ErrClosed means the buffer's or the pool's device was closed, which
	// freed (unmapped, or unregistered) its memory; it is driver.ErrClosed.
	ErrClosed = driver.ErrClosed
	// ErrNil means a nil or zero Buffer or Pool, one not made by this
	// package's functions; it wraps driver.ErrInvalidValue.
	ErrNil = fmt.Errorf("pinned: nil or zero Buffer or Pool (make them with Alloc, Register or NewPool): %w", driver.ErrInvalidValue)
)

// errDeviceClosed is the error of a buffer whose device was closed.
var errDeviceClosed = fmt.Errorf("pinned: the buffer's device was closed, which freed its memory: %w", ErrClosed)
