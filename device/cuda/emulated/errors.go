//go:build cuda && cudaemu && linux

package emulated

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"sync"

	"github.com/cuarray/cuarray/device/driver"
)

// cuResult is a CUresult.
type cuResult int

// The results the emulated driver returns.
const (
	success                   = cuResult(C.CUDA_SUCCESS)
	errInvalidValue           = cuResult(C.CUDA_ERROR_INVALID_VALUE)
	errOutOfMemory            = cuResult(C.CUDA_ERROR_OUT_OF_MEMORY)
	errNotInitialized         = cuResult(C.CUDA_ERROR_NOT_INITIALIZED)
	errNoDevice               = cuResult(C.CUDA_ERROR_NO_DEVICE)
	errInvalidDevice          = cuResult(C.CUDA_ERROR_INVALID_DEVICE)
	errInvalidImage           = cuResult(C.CUDA_ERROR_INVALID_IMAGE)
	errInvalidContext         = cuResult(C.CUDA_ERROR_INVALID_CONTEXT)
	errContextIsDestroyed     = cuResult(C.CUDA_ERROR_CONTEXT_IS_DESTROYED)
	errNoBinaryForGPU         = cuResult(C.CUDA_ERROR_NO_BINARY_FOR_GPU)
	errInvalidHandle          = cuResult(C.CUDA_ERROR_INVALID_HANDLE)
	errNotFound               = cuResult(C.CUDA_ERROR_NOT_FOUND)
	errNotReady               = cuResult(C.CUDA_ERROR_NOT_READY)
	errIllegalAddress         = cuResult(C.CUDA_ERROR_ILLEGAL_ADDRESS)
	errLaunchOutOfResources   = cuResult(C.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
	errMisalignedAddress      = cuResult(C.CUDA_ERROR_MISALIGNED_ADDRESS)
	errHostAlreadyRegistered  = cuResult(C.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
	errHostNotRegistered      = cuResult(C.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
	errPrimaryContextActive   = cuResult(C.CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)
	errNotSupported           = cuResult(C.CUDA_ERROR_NOT_SUPPORTED)
	errPeerAccessUnsupported  = cuResult(C.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
	errInvalidPTX             = cuResult(C.CUDA_ERROR_INVALID_PTX)
	errLaunchFailed           = cuResult(C.CUDA_ERROR_LAUNCH_FAILED)
	errLaunchTimeout          = cuResult(C.CUDA_ERROR_LAUNCH_TIMEOUT)
	errFileNotFound           = cuResult(C.CUDA_ERROR_FILE_NOT_FOUND)
	errNotMapped              = cuResult(C.CUDA_ERROR_NOT_MAPPED)
	errInvalidSource          = cuResult(C.CUDA_ERROR_INVALID_SOURCE)
	errOperatingSystem        = cuResult(C.CUDA_ERROR_OPERATING_SYSTEM)
	errUnknown                = cuResult(C.CUDA_ERROR_UNKNOWN)
	errContextAlreadyInUse    = cuResult(C.CUDA_ERROR_CONTEXT_ALREADY_IN_USE)
	errNotMappedAsPointer     = cuResult(C.CUDA_ERROR_NOT_MAPPED_AS_POINTER)
	errAlreadyMapped          = cuResult(C.CUDA_ERROR_ALREADY_MAPPED)
	errStreamCaptureUnsupport = cuResult(C.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
	errNotPermitted           = cuResult(C.CUDA_ERROR_NOT_PERMITTED)
)

// resultText names each result and describes it, in the driver's words
// (cuGetErrorName, cuGetErrorString).
var resultText = map[cuResult][2]string{
	success:                   {"CUDA_SUCCESS", "no error"},
	errInvalidValue:           {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	errOutOfMemory:            {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	errNotInitialized:         {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	errNoDevice:               {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	errInvalidDevice:          {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	errInvalidImage:           {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	errInvalidContext:         {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	errContextIsDestroyed:     {"CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	errNoBinaryForGPU:         {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	errInvalidHandle:          {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	errNotFound:               {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	errNotReady:               {"CUDA_ERROR_NOT_READY", "device not ready"},
	errIllegalAddress:         {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	errLaunchOutOfResources:   {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	errMisalignedAddress:      {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	errHostAlreadyRegistered:  {"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
	errHostNotRegistered:      {"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
	errPrimaryContextActive:   {"CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "primary context active"},
	errNotSupported:           {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	errPeerAccessUnsupported:  {"CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
	errInvalidPTX:             {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	errLaunchFailed:           {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	errLaunchTimeout:          {"CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	errFileNotFound:           {"CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
	errNotMapped:              {"CUDA_ERROR_NOT_MAPPED", "resource not mapped"},
	errInvalidSource:          {"CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
	errOperatingSystem:        {"CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
	errUnknown:                {"CUDA_ERROR_UNKNOWN", "unknown error"},
	errContextAlreadyInUse:    {"CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "context already in use"},
	errNotMappedAsPointer:     {"CUDA_ERROR_NOT_MAPPED_AS_POINTER", "mapped resource not available for access as a pointer"},
	errAlreadyMapped:          {"CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
	errStreamCaptureUnsupport: {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
	errNotPermitted:           {"CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
}

func (r cuResult) name() string {
	if t, ok := resultText[r]; ok {
		return t[0]
	}
	return "CUDA_ERROR_UNKNOWN_CODE"
}

// cStrings holds the C copies of resultText, made once: the driver's
// strings live as long as the process.
var (
	cStringsOnce sync.Once
	cNames       map[cuResult]*C.char
	cDescs       map[cuResult]*C.char
)

func resultCStrings(r cuResult) (name, desc *C.char, ok bool) {
	cStringsOnce.Do(func() {
		cNames, cDescs = make(map[cuResult]*C.char), make(map[cuResult]*C.char)
		for r, t := range resultText {
			cNames[r], cDescs[r] = C.CString(t[0]), C.CString(t[1])
		}
	})
	name, ok = cNames[r]
	return name, cDescs[r], ok
}

// codeOf maps an error of the sim machinery to the result the driver
// gives for it. A device fault is the context's sticky result.
func (c *context) codeOf(err error) cuResult {
	r := c.resultOf(err)
	noteKernelDetail(r, err)
	return r
}

// resultOf is codeOf's mapping.
func (c *context) resultOf(err error) cuResult {
	switch {
	case err == nil:
		return success
	case errors.Is(err, driver.ErrContextFailed):
		return c.stickyResult()
	case errors.Is(err, driver.ErrStreamRace):
		noteRace(err) // CUDA has no code for it: the report goes to standard error and Races
		return errUnknown
	case errors.Is(err, driver.ErrOutOfMemory):
		return errOutOfMemory
	case errors.Is(err, driver.ErrNotReady):
		return errNotReady
	case errors.Is(err, driver.ErrOwnIPCHandle):
		return errInvalidContext
	case errors.Is(err, driver.ErrStaleIPCHandle), errors.Is(err, driver.ErrInvalidPointer), errors.Is(err, driver.ErrInvalidValue):
		return errInvalidValue
	case errors.Is(err, driver.ErrNotMapped):
		return errNotMapped
	case errors.Is(err, driver.ErrClosed):
		return errContextIsDestroyed
	case errors.Is(err, errors.ErrUnsupported):
		return errNotSupported
	}
	return errUnknown
}
