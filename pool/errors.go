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
	// LargestFree is the largest block of the device's free memory when
	// the device refused, from its error (accounting.OutOfMemoryError's
	// DeviceLargestFree: sim tells it, the CUDA driver does not), else -1.
	LargestFree int64
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
	switch {
	case e.ByLimit:
		why = "the pool's limit would be passed"
	case errors.Is(e.Err, ErrReservationFull):
		why = e.Err.Error()
	default:
		why += e.room()
	}
	return fmt.Sprintf("pool: out of memory allocating %s (free %s, total %s, limit %s; in use %s, cached %s): %s",
		size(e.Requested), size(e.Free), size(e.Total), limit, size(e.InUse), size(e.Cached), why)
}

// room says where the device's bytes are, so that the message accounts
// for each it names: the total is the pool's (in use and cached), the
// bytes held outside the pool and the free bytes; and why free bytes as
// many as requested could not hold the request: the largest free block
// is smaller (fragmentation, 1 − largest free block / free bytes), or
// the device does not say how its free bytes lie.
func (e *OutOfMemoryError) room() string {
	if e.Free < 0 || e.Total < 0 {
		return ""
	}
	var out string
	if outside := e.Total - e.Free - e.InUse - e.Cached; outside >= 0 {
		out = fmt.Sprintf("; total %s = in use %s + cached %s + %s outside the pool + free %s",
			accounting.FormatBytes(e.Total), accounting.FormatBytes(e.InUse), accounting.FormatBytes(e.Cached),
			accounting.FormatBytes(outside), accounting.FormatBytes(e.Free))
	}
	switch {
	case e.Free < e.Requested:
	case e.LargestFree >= 0 && e.LargestFree < e.Requested:
		out += fmt.Sprintf("; the free %s lie in blocks of at most %s, less than requested (fragmentation %.3f, 1 − largest free block / free bytes)",
			accounting.FormatBytes(e.Free), accounting.FormatBytes(e.LargestFree), accounting.Fragmentation(e.LargestFree, e.Free))
	case e.LargestFree < 0:
		out += fmt.Sprintf("; the device does not say how its free %s lie: in blocks each smaller than requested, as the allocation found",
			accounting.FormatBytes(e.Free))
	}
	return out
}

// Is makes errors.Is(err, accounting.ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == accounting.ErrOutOfMemory }

// Unwrap returns the device's error.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }
