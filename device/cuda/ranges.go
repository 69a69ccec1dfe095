//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// outside explains a failed call on device memory: when the driver refused
// it as an invalid value and one of the ranges [p, p+n) does not lie inside
// a live allocation (cuPointerGetAttributes says so), the error wraps
// driver.ErrInvalidPointer as sim's does, naming the range. It costs
// nothing on success: it runs only after a refusal.
func (d *Device) outside(err error, ranges ...driver.Range) error {
	if err == nil || !errors.Is(err, driver.ErrInvalidValue) {
		return err
	}
	for _, r := range ranges {
		info, perr := d.PointerInfo(r.Ptr)
		if perr != nil || info.Kind != devarray.CUDA && info.Kind != devarray.CUDAHost ||
			r.N > info.Size-int64(r.Ptr-info.Base) {
			return fmt.Errorf("bytes [%v, +%d) are not inside a live allocation: %w: %w", r.Ptr, r.N, driver.ErrInvalidPointer, err)
		}
	}
	return err
}
