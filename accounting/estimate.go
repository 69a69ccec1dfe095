package accounting

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/cuarray/cuarray/devarray"
)

// Granularity is the size, in bytes, that device allocations are rounded up
// to: the CUDA driver's and the sim device's alignment, and the pool's and
// workspaces' unit. Estimates count whole granules, as the device does.
const Granularity = 256

// DefaultOverhead is the factor WouldFit and planners multiply an estimate
// by, for what an estimate does not see (rust_ai_core's 1.1).
const DefaultOverhead = 1.1

// AlignUp rounds n up to a multiple of Granularity; 0 stays 0. It returns
// -1 when the result would overflow.
func AlignUp(n int64) int64 {
	if n < 0 || n > math.MaxInt64-(Granularity-1) {
		return -1
	}
	return (n + Granularity - 1) / Granularity * Granularity
}

// AllocBytes is what one device allocation of n bytes takes from the device:
// n rounded up to Granularity, and at least one granule.
func AllocBytes(n int64) int64 { return AlignUp(max(n, 1)) }

// EstimateBytes returns the bytes an array of the given shape and dtype
// needs on the device: the element count times the item size, rounded up to
// Granularity as the allocation is. A negative dimension, an invalid dtype,
// or an element count, a size or a rounded size past int64 is an error; the
// element count is checked axis by axis, as devarray does, so a shape with a
// zero-length axis needs one granule wherever devarray can describe it.
func EstimateBytes(shape []int, dtype devarray.DType) (int64, error) {
	if !dtype.Valid() {
		return 0, fmt.Errorf("accounting: estimate %v of dtype %v: %w", shape, dtype, devarray.ErrDType)
	}
	elems := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("accounting: estimate shape %v: negative dimension: %w", shape, devarray.ErrShape)
		}
		hi, lo := bits.Mul64(elems, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("accounting: estimate shape %v has too many elements: %w", shape, devarray.ErrOverflow)
		}
		elems = lo
	}
	hi, n := bits.Mul64(elems, uint64(dtype.Size()))
	if hi != 0 || n > maxAllocBytes {
		return 0, fmt.Errorf("accounting: estimate shape %v of %v: %w", shape, dtype, devarray.ErrOverflow)
	}
	return AllocBytes(int64(n)), nil
}

// maxAllocBytes is the largest allocation an estimate can name: the last
// whole granule in int64.
const maxAllocBytes = math.MaxInt64 / Granularity * Granularity

// SetOverhead sets the factor WouldFit multiplies a request by; it must be
// at least 1. The default is DefaultOverhead.
func (l *Ledger) SetOverhead(f float64) error {
	if l == nil {
		return fmt.Errorf("accounting: set overhead: %w", ErrNil)
	}
	if !(f >= 1) || math.IsInf(f, 0) {
		return fmt.Errorf("accounting: overhead factor %v: want a finite factor of at least 1: %w", f, ErrInvalidArgument)
	}
	l.overhead.Store(math.Float64bits(f))
	return nil
}

// Overhead returns the factor set by SetOverhead, or DefaultOverhead.
func (l *Ledger) Overhead() float64 {
	if l == nil {
		return DefaultOverhead
	}
	if b := l.overhead.Load(); b != 0 {
		return math.Float64frombits(b)
	}
	return DefaultOverhead
}

// Available returns the device bytes that can still be allocated: the
// device's free memory (when SetMemInfo told the ledger how to ask) and the
// room under the Device limit (when one is set), whichever is smaller. With
// neither known it returns math.MaxInt64.
func (l *Ledger) Available() (int64, error) {
	if l == nil {
		return 0, fmt.Errorf("accounting: available memory: %w", ErrNil)
	}
	room := int64(math.MaxInt64)
	if lim := l.Limit(Device); lim > 0 {
		room = max(lim-l.Current(Device), 0)
	}
	if f := l.memInfo.Load(); f != nil {
		free, _, err := (*f)()
		if err != nil {
			return 0, fmt.Errorf("accounting: available memory: %w", err)
		}
		room = min(room, free)
	}
	return room, nil
}

// WouldFit reports whether an allocation of n device bytes, times the
// overhead factor, fits in what Available reports. It allocates nothing:
// another goroutine may take the room before the caller does.
func (l *Ledger) WouldFit(n int64) bool {
	if n < 0 {
		return false
	}
	room, err := l.Available()
	if err != nil {
		return false
	}
	return float64(n)*l.Overhead() <= float64(room)
}
