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
	ErrNoDevice = errors.New("no such device")
	// ErrBadSpec: a device spec that cannot be parsed.
	ErrBadSpec = errors.New("bad device spec")
	// ErrInvalidValue: an argument out of range (negative size, bad pitch, unknown flag).
	ErrInvalidValue = errors.New("invalid value")
	// ErrInvalidPointer: an address range that is not inside a live allocation.
	ErrInvalidPointer = errors.New("invalid device pointer")
	// ErrNotMapped: mapped host memory was asked for on a context without CU_CTX_MAP_HOST.
	ErrNotMapped = errors.New("the context cannot map host memory (CU_CTX_MAP_HOST is not set)")
	// ErrNotReady: an event or stream has not completed.
	ErrNotReady = errors.New("not ready")
	// ErrClosed: the device, stream or event was closed.
	ErrClosed = errors.New("device closed")
	// ErrInjected: a failure injected on purpose by a fault-injection setting.
	ErrInjected = errors.New("injected fault")
	// ErrContextFailed: device work hit a fault that leaves the context
	// unusable (CUDA's sticky errors: an illegal address, a failed or
	// timed-out launch, an uncorrectable ECC error). Every later call of
	// the device fails with it, frees included, until the device is
	// closed; on a GPU only a new process can use CUDA again. A program
	// that sees it should stop using the device rather than retry.
	ErrContextFailed = errors.New("the context hit an unrecoverable fault; every later call fails until the device is closed (on a GPU, restart the process)")
	// ErrOwnIPCHandle: an IPC handle opened in the process that exported
	// it. CUDA maps an allocation into other processes only; the exporter
	// uses its own pointer. It wraps ErrInvalidValue.
	ErrOwnIPCHandle = &refinedError{"the IPC handle was exported by this process (CUDA opens a handle only in another process; here use the exported pointer)", ErrInvalidValue}
	// ErrStaleIPCHandle: an IPC handle whose allocation is gone: the
	// exporter freed it, or its process exited. It wraps ErrInvalidValue.
	ErrStaleIPCHandle = &refinedError{"stale IPC handle (the exporting process freed the allocation or exited)", ErrInvalidValue}
	// ErrAlreadyLocked: a registration of host memory that shares bytes
	// with memory already page-locked (registered, or allocated
	// page-locked). CUDA answers CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
	// for bytes registered twice; backends refuse any shared byte before the
	// driver sees it. It wraps ErrInvalidValue.
	ErrAlreadyLocked = &refinedError{"host memory already page-locked in part (unregister or free it first)", ErrInvalidValue}
	// ErrStreamRace: two operations touch overlapping bytes, at least one
	// of them writes, and CUDA's ordering rules order neither before the
	// other (no stream order, event, synchronization or implicit default
	// stream order between them): a race on a GPU, whatever the timing.
	// sim reports it with check=streams; the error names both operations.
	ErrStreamRace = errors.New("stream race")
)

// refinedError is a sentinel that is a more precise case of another one:
// errors.Is matches both.
type refinedError struct {
	msg    string
	parent error
}

func (e *refinedError) Error() string { return e.msg }
func (e *refinedError) Unwrap() error { return e.parent }
