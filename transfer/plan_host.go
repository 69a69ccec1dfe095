package transfer

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// PlanHost returns the path Copy would take for n contiguous bytes
// between the device and host memory of the given side (InPageable or
// InPinned; mapped: a pinned buffer allocated with pinned.Mapped), in
// direction dir (HtoD or DtoH), and why, without the arrays: what `cuarray
// bench` reports beside each size it measures. Pageable memory is taken
// as not registered yet.
func (c *Copier) PlanHost(side Side, mapped bool, dir accounting.Direction, n int64, opts ...Option) (Choice, error) {
	if c == nil {
		return Choice{}, fmt.Errorf("transfer: nil Copier; make one with New: %w", driver.ErrInvalidValue)
	}
	if (side != InPageable && side != InPinned) || (mapped && side != InPinned) || (dir != accounting.HtoD && dir != accounting.DtoH) || n < 0 {
		return Choice{}, fmt.Errorf("transfer: plan %d bytes %v of %v host memory (mapped %v): want pageable or pinned memory, HtoD or DtoH, a size of 0 or more: %w",
			n, dir, side, mapped, driver.ErrInvalidValue)
	}
	opt, err := apply(c.opt, opts)
	if err != nil {
		return Choice{}, err
	}
	if opt.Profile == nil {
		opt.Profile = c.opt.Profile
	}
	reg := regNone
	if side == InPageable {
		reg = regFresh // no memory named: not registered yet
	}
	return pick(side, mapped, dir, n, 1, reg, opt, true), nil
}
