package accounting

import (
	"errors"
	"fmt"
)

// ErrOutOfMemory matches, with errors.Is, every out-of-memory error: a ledger
// limit that an allocation would pass and a device that has no memory left.
var ErrOutOfMemory = errors.New("out of memory")

// ErrInvalidArgument: an unknown kind, a negative size or limit, or a scope
// popped out of order.
var ErrInvalidArgument = errors.New("invalid argument")

// ErrNil: a method of a nil Ledger, Scope or Workspace that returns an
// error, or a nil function or writer argument. It wraps ErrInvalidArgument.
// A nil Ledger's recording methods record nothing and its getters return
// zeros; nothing in the package panics on a nil or zero value.
var ErrNil = fmt.Errorf("accounting: nil Ledger, Scope or Workspace, or nil argument: %w", ErrInvalidArgument)

// ErrLogOff is returned by calls that need the event log while it is off.
var ErrLogOff = errors.New("the ledger's event log is off (call StartLog first)")

// OutOfMemoryError says why an allocation failed. errors.Is(err,
// ErrOutOfMemory) matches it; errors.As gives its fields.
type OutOfMemoryError struct {
	Kind      Kind
	Requested int64 // bytes asked for
	InUse     int64 // bytes of this kind in use when it failed
	Limit     int64 // the ledger's limit for the kind; 0 when none was set
	// DeviceFree and DeviceTotal are the device's own figures, or -1 when unknown.
	DeviceFree, DeviceTotal int64
	// DeviceLargestFree is the largest block of the device's free memory,
	// the most one allocation can take, when the device tells it (sim
	// does; the CUDA driver's cuMemGetInfo gives the free bytes only), else
	// 0 or -1. Below Requested while DeviceFree is not, it says why the
	// free bytes could not hold the request: they lie in smaller pieces.
	DeviceLargestFree int64
	// ByLimit is true when the ledger's limit refused the allocation, false
	// when the device itself had no memory.
	ByLimit bool
}

// Error describes the failure with every figure known.
func (e *OutOfMemoryError) Error() string {
	who := "the device has no room"
	if e.ByLimit {
		who = fmt.Sprintf("the ledger's %s limit is %s", e.Kind, FormatBytes(e.Limit))
	}
	dev := ""
	if e.DeviceTotal >= 0 {
		dev = fmt.Sprintf("; device free %s of %s", FormatBytes(e.DeviceFree), FormatBytes(e.DeviceTotal))
		if e.DeviceLargestFree > 0 && e.DeviceFree > 0 {
			dev += fmt.Sprintf(", the largest free block %s (fragmentation %.3f)", FormatBytes(e.DeviceLargestFree), Fragmentation(e.DeviceLargestFree, e.DeviceFree))
		}
	}
	return fmt.Sprintf("out of memory: %s of %s requested with %s in use: %s%s",
		FormatBytes(e.Requested), e.Kind, FormatBytes(e.InUse), who, dev)
}

// Fragmentation is 1 − largest / free: how far free bytes are from one
// block that a single allocation could take. It is 0 when they are one
// block (or there are none), near 1 when they lie in many small pieces.
func Fragmentation(largest, free int64) float64 {
	if free <= 0 || largest <= 0 {
		return 0
	}
	return 1 - float64(min(largest, free))/float64(free)
}

// Is makes errors.Is(err, ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

// FormatBytes writes n with a binary unit: "512 B", "1.5 KiB", "4.00 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	// Divide while the figure, rounded to two decimals as it is printed,
	// would still read 1024.00 or more: 1 GiB less a granule is "1.00 GiB",
	// never "1024.00 MiB".
	for (f >= unit-0.005 || f <= -(unit-0.005)) && i < 6 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.2f %ciB", f, "KMGTPE"[i-1])
}
