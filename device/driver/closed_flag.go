package driver

import "sync/atomic"

// ClosedFlag reads a device's closed flag in place, for code that checks it
// on a hot path: package pool does at every allocation, where a call
// through an interface (Closed) would cost more than the check itself.
// Devices that keep such a flag return one from a ClosedFlag method. It
// can only be read: the device sets the flag when it closes.
type ClosedFlag struct{ flag *atomic.Bool }

// NewClosedFlag returns a ClosedFlag that reads flag, which its device
// sets when it closes.
func NewClosedFlag(flag *atomic.Bool) ClosedFlag { return ClosedFlag{flag} }

// Closed reports whether the device has been closed; false for the zero
// ClosedFlag, which reads no flag.
func (c ClosedFlag) Closed() bool { return c.flag != nil && c.flag.Load() }

// Valid reports whether c reads a device's flag (it is not the zero ClosedFlag).
func (c ClosedFlag) Valid() bool { return c.flag != nil }
