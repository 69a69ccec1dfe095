package kernels

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// guard is the check at the top of every exported method: the Kernels are
// ones New made (a nil or zero Kernels is driver.ErrInvalidValue) and
// every array given is a live one (devarray.ErrNil for a nil or zero
// array, devarray.ErrFreed for freed memory), so that no bad argument
// reaches a kernel launch.
func (k *Kernels) guard(op string, arrays ...*devarray.DevArray) error {
	if k == nil || k.dev == nil {
		return fmt.Errorf("kernels: %s: nil or zero Kernels (make them with New): %w", op, driver.ErrInvalidValue)
	}
	for _, a := range arrays {
		if err := a.Err(); err != nil {
			return fmt.Errorf("kernels: %s: %w", op, err)
		}
	}
	return nil
}
