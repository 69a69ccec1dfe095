package driver

import (
	"errors"

	"github.com/cuarray/cuarray/accounting"
)

// Errors shared by every backend. A backend's errors wrap one of these, so
// errors.Is works whatever the backend.
var (
	// ErrOutOfMemory is accounting.ErrOutOfMemory: a ledger limit and a
	// device that is full give the same error type, *accounting.OutOfMemoryError.
	ErrOutOfMemory = accounting.ErrOutOfMemory
	// ErrNoDevice: no device answers to the spec (no GPU, or not built with -tags cuda).
	ErrNoDevice = errors.New("device: no such device")
	// ErrBadSpec: a device spec that cannot be parsed.
	ErrBadSpec = errors.New("device: bad device spec")
	// ErrInvalidValue: an argument out of range (negative size, bad pitch, unknown flag).
	ErrInvalidValue = errors.New("device: invalid value")
	// ErrInvalidPointer: an address range that is not inside a live allocation.
	ErrInvalidPointer = errors.New("device: invalid device pointer")
	// ErrNotMapped: mapped host memory was asked for on a context without CU_CTX_MAP_HOST.
	ErrNotMapped = errors.New("device: the context cannot map host memory (CU_CTX_MAP_HOST is not set)")
	// ErrNotReady: an event or stream has not completed.
	ErrNotReady = errors.New("device: not ready")
	// ErrClosed: the device, stream or event was closed.
	ErrClosed = errors.New("device: closed")
	// ErrInjected: a failure injected on purpose by a fault-injection setting.
	ErrInjected = errors.New("device: injected fault")
)
