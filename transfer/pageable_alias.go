package transfer

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// checkNotAliased refuses a copy between host memory and an array of
// pageable memory used in place (devarray.FromPageable, whose address is
// its Go slice's) when the two share bytes: the driver's copies are
// undefined for overlapping memory, and the staged path's chunks would
// read what earlier chunks wrote.
func checkNotAliased(dst, src Endpoint) error {
	dev, host := dst, src
	if dev.side != OnDevice {
		dev, host = src, dst
	}
	if dev.side != OnDevice || host.side == OnDevice || !dev.arr.Pageable() {
		return nil
	}
	lo, hi := host.arr.Extent()
	if dev.arr.SharesHost(uintptr(host.arr.Ptr())+uintptr(lo), hi-lo) {
		return fmt.Errorf("transfer: the %v side and the pageable array used in place share memory (its slice's): copy through other memory: %w: %w",
			host.side, devarray.ErrSharesMemory, driver.ErrInvalidValue)
	}
	return nil
}
