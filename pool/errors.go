package pool

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// ErrInUse: Release found blocks still allocated; their segments were kept.
var ErrInUse = errors.New("pool blocks still in use")

// ErrNil: a method of a nil or zero Pool, or of one made by New(nil). It
// wraps driver.ErrInvalidValue. Getters return zero values instead.
var ErrNil = fmt.Errorf("pool: nil or zero Pool, or one without a device (make it with New): %w", driver.ErrInvalidValue)

// ErrNotAllocated: Free of a pointer the pool did not hand out, or freed twice.
var ErrNotAllocated = errors.New("pointer not allocated by this pool")

// OutOfMemoryError is an allocation the pool could not serve even after
// freeing its cache. errors.Is(err, accounting.ErrOutOfMemory) matches it,
// and it unwraps to the device's own error when the device refused.
type OutOfMemoryError struct {
	Requested int64 // bytes asked for, rounded up to the granule
	Free      int64 // the device's free bytes, -1 when unknown
	Total     int64 // the device's total bytes, -1 when unknown
	Limit     int64 // the pool's limit on bytes in use; 0 when none
	InUse     int64 // bytes handed out by the pool when it failed
	Cached    int64 // bytes the pool held free when it failed
	ByLimit   bool  // the pool's limit refused it, not the device
	Err       error // the device's error, nil when the limit refused
}

// Error gives the figures in CuPy's order: requested, free, total, limit.
func (e *OutOfMemoryError) Error() string {
	size := func(n int64) string {
		if n < 0 {
			return "unknown"
		}
		return accounting.FormatBytes(n)
	}
	limit := "none"
	if e.Limit > 0 {
		limit = accounting.FormatBytes(e.Limit)
	}
	why := "the device has no room after the cache was freed"
	if e.ByLimit {
		why = "the pool's limit would be passed"
	}
	return fmt.Sprintf("pool: out of memory allocating %s (free %s, total %s, limit %s; in use %s, cached %s): %s",
		size(e.Requested), size(e.Free), size(e.Total), limit, size(e.InUse), size(e.Cached), why)
}

// Is makes errors.Is(err, accounting.ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == accounting.ErrOutOfMemory }

// Unwrap returns the device's error.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }
