package cupti

import (
	"errors"
	"fmt"
)

// ErrUnavailable means that CUPTI cannot count unified-memory migrations in this process:
// libcupti could not be loaded, the build has no CUPTI support, or CUPTI refused the counters
// on this machine. The error that matches it says why.
var ErrUnavailable = errors.New("unified-memory counters unavailable")

// ErrBusy is Start while another Counter of this process runs: CUPTI's activity buffers and
// callbacks are one per process.
var ErrBusy = errors.New("a counter is already running in this process")

// ErrStopped is Flush on a Counter that was stopped.
var ErrStopped = errors.New("counter stopped")

// ErrNil is a method called on a nil *Library or *Counter.
var ErrNil = errors.New("nil library or counter")

// unavailableError is ErrUnavailable with the reason.
type unavailableError struct{ why string }

func (e *unavailableError) Error() string        { return "cupti: " + ErrUnavailable.Error() + ": " + e.why }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// unavailable returns an error that matches ErrUnavailable and says why.
func unavailable(format string, args ...any) error {
	return &unavailableError{why: fmt.Sprintf(format, args...)}
}

// Result is a CUptiResult, as cupti_result.h numbers it.
type Result int

// The CUptiResult values this package tells apart.
const (
	ResultSuccess                          Result = 0
	ResultInvalidParameter                 Result = 1
	ResultNotCompatible                    Result = 14
	ResultNotInitialized                   Result = 15
	ResultNotSupported                     Result = 27
	ResultUMProfilingNotSupported          Result = 28
	ResultUMProfilingNotSupportedOnDevice  Result = 29
	ResultUMProfilingNotSupportedNonP2P    Result = 30
	ResultUMProfilingNotSupportedWithMPS   Result = 31
	ResultVirtualizedDeviceNotSupported    Result = 33
	ResultInsufficientPrivileges           Result = 35
	ResultMultipleSubscribersNotSupported  Result = 39
	ResultVirtualizedInsufficientPrivilege Result = 40
	ResultConfidentialComputingUnsupported Result = 41
	ResultCMPDeviceNotSupported            Result = 42
	ResultUnknown                          Result = 999
)

// Error is a CUPTI call that did not return CUPTI_SUCCESS.
type Error struct {
	Op     string // the CUPTI function, e.g. "cuptiActivityEnable"
	Result Result // its CUptiResult
	Name   string // cuptiGetResultString's name for it, e.g. "CUPTI_ERROR_NOT_INITIALIZED"
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("cupti: %s: %s (%d)", e.Op, e.Name, int(e.Result))
	if why := e.why(); why != "" {
		msg += ": " + why
	}
	return msg
}

// Is reports an Error whose result means that this process cannot count migrations as
// matching ErrUnavailable.
func (e *Error) Is(target error) bool { return target == ErrUnavailable && e.why() != "" }

// why says what a result that makes the counters unavailable means, or "" for another.
func (e *Error) why() string {
	switch e.Result {
	case ResultNotInitialized:
		return "CUPTI could not initialize: no CUDA driver or no GPU answered"
	case ResultNotCompatible, ResultNotSupported:
		return "this CUPTI, driver or device does not support the unified-memory counters"
	case ResultUMProfilingNotSupported:
		return "the unified-memory counters are not supported on this platform"
	case ResultUMProfilingNotSupportedOnDevice:
		return "the device does not support the unified-memory counters"
	case ResultUMProfilingNotSupportedNonP2P:
		return "the unified-memory counters need peer access between every pair of GPUs"
	case ResultUMProfilingNotSupportedWithMPS:
		return "the unified-memory counters are not supported under MPS"
	case ResultVirtualizedDeviceNotSupported, ResultVirtualizedInsufficientPrivilege:
		return "profiling is not allowed on this virtualized GPU"
	case ResultInsufficientPrivileges:
		return "profiling needs privileges this process lacks (NVreg_RestrictProfilingToAdminUsers)"
	case ResultMultipleSubscribersNotSupported:
		return "another profiler holds CUPTI in this process"
	case ResultConfidentialComputingUnsupported, ResultCMPDeviceNotSupported:
		return "profiling is not supported on this device"
	}
	return ""
}
