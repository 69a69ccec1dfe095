//go:build cuda

package cuda

import (
	"github.com/cuarray/cuarray/devarray"
)

// Allocation returns the allocation that holds address p, as the driver
// knows it (cuPointerGetAttributes): imports check a foreign descriptor's
// extent against it.
func (d *Device) Allocation(p devarray.Ptr) (base devarray.Ptr, size int64, ok bool) {
	info, err := d.PointerInfo(p)
	if err != nil || info.Size <= 0 {
		return 0, 0, false
	}
	return info.Base, info.Size, true
}
