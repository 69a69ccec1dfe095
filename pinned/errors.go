package pinned

import (
	"errors"

	"github.com/cuarray/cuarray/device/driver"
)

var (
	// ErrBusy means an async copy still uses the buffer; wait for it
	// (Op.Wait in package transfer, or the stream) before freeing.
	ErrBusy = errors.New("pinned: buffer still in use by an async copy")
	// ErrFreed means the buffer was freed or unregistered.
	ErrFreed = errors.New("pinned: buffer was freed")
	// ErrInUse means a pool still has buffers handed out.
	ErrInUse = errors.New("pinned: pool has buffers in use")
	// ErrUnmapped means the buffer has no device address: it was not
	// allocated or registered with Mapped.
	ErrUnmapped = errors.New("pinned: buffer is not mapped into the device (allocate or register it with Mapped)")
	// ErrNotMapped means the context cannot map host memory at all (no
	// CU_CTX_MAP_HOST); it is driver.ErrNotMapped.
	ErrNotMapped = driver.ErrNotMapped
)
