package interop

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// checkOpen returns an error wrapping driver.ErrClosed when a's device
// was closed: Close freed the memory with it, and an export would hand a
// consumer an address nothing holds.
func checkOpen(a *devarray.DevArray) error {
	if c, ok := a.Backend().(interface{ Closed() bool }); ok && c.Closed() {
		return fmt.Errorf("%v was closed, and its memory with it: %w", a.Device(), driver.ErrClosed)
	}
	return nil
}
