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
	dlo, dhi := byteSpan(dev.arr)
	hlo, hhi := byteSpan(host.arr)
	if dlo < dhi && hlo < hhi && dlo < hhi && hlo < dhi {
		return fmt.Errorf("transfer: the %v side and the pageable array used in place share memory (its slice's): copy through other memory: %w",
			host.side, driver.ErrInvalidValue)
	}
	return nil
}

// byteSpan returns the addresses of the first byte a's elements touch and
// one past the last.
func byteSpan(a *devarray.DevArray) (lo, hi uint64) {
	l, h := a.Extent()
	p := uint64(a.Ptr())
	return p + uint64(l), p + uint64(h)
}
