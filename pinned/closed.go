package pinned

import (
	"errors"

	"github.com/cuarray/cuarray/device/driver"
)

// A device's Close frees the page-locked memory still allocated on it: sim
// unmaps it, CUDA frees it with the context. A Buffer or Pool therefore
// asks its device, before it hands out or touches memory, whether it was
// closed; once it was, the buffer counts as freed (with ErrClosed) and the
// pool as closed, for good.

// closedReporter is what a device may implement to say cheaply that it was
// closed.
type closedReporter interface{ Closed() bool }

// deviceClosed reports whether dev was closed. A device without a Closed
// method is asked to free no memory: backends check for Close before they
// look at the memory, so that is ErrClosed on a closed device and
// ErrInvalidPointer, with nothing freed or recorded, on an open one.
func deviceClosed(dev driver.Device) bool {
	if c, ok := dev.(closedReporter); ok {
		return c.Closed()
	}
	return errors.Is(dev.HostFree(&driver.HostMem{}), driver.ErrClosed)
}
