//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"reflect"

	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/device/driver"
)

// DriverError is a CUDA driver result other than success.
type DriverError struct {
	Code int    // the CUresult
	Name string // "CUDA_ERROR_OUT_OF_MEMORY"
	Desc string // the driver's description
	// Detail is what the emulated driver's PTX interpreter reports of the
	// kernel that faulted or was refused (kernel, PTX line, block, thread,
	// address, argument); empty on a GPU, whose driver says no more than
	// the code.
	Detail string
	kind   error // the driver error kind it maps to, or nil
}

func (e *DriverError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s (%d): %s: %s", e.Name, e.Code, e.Desc, e.Detail)
	}
	return fmt.Sprintf("%s (%d): %s", e.Name, e.Code, e.Desc)
}

// Unwrap returns the cuarray error kind (driver.ErrInvalidValue, ...), so
// errors.Is works the same on every backend.
func (e *DriverError) Unwrap() error { return e.kind }

// kindOf maps a driver result to cuarray's error kinds.
func kindOf(c int) error {
	switch c {
	case codeOutOfMemory:
		return driver.ErrOutOfMemory
	case codeInvalidValue, codeInvalidHandle, codeNotFound, codeHostAlreadyRegistered, codeHostNotRegistered:
		return driver.ErrInvalidValue
	case codeNoDevice, codeInvalidDevice:
		return driver.ErrNoDevice
	case codeNotReady:
		return driver.ErrNotReady
	case codeNotMapped, codeNotMappedAsPointer:
		return driver.ErrNotMapped
	case codeInvalidContext, codeContextIsDestroyed:
		return driver.ErrClosed
	}
	if stickyCodes[c] {
		return driver.ErrContextFailed
	}
	return nil
}

// check turns a result code into an error: nil for success.
func check(c int) error {
	if c == 0 {
		return nil
	}
	name, desc := errorName(c)
	return &DriverError{Code: c, Name: name, Desc: desc, Detail: resultDetail(c), kind: kindOf(c)}
}

// fromCu turns an error of gorgonia.org/cu (an integer CUresult) into a
// *DriverError; other errors pass through.
func fromCu(err error) error {
	if err == nil {
		return nil
	}
	if v := reflect.ValueOf(err); v.Kind() == reflect.Int {
		return check(int(v.Int()))
	}
	return err
}

// MissingFunctionError is a driver function that the installed driver does
// not have: it is older than the function. It wraps errors.ErrUnsupported.
type MissingFunctionError struct {
	Symbol string // the driver symbol, "cuMemcpy3DAsync_v2"
	Needs  int    // the driver API version that brought it (12000 for CUDA 12.0), 0 when not known
	Driver int    // the installed driver's API version (cuDriverGetVersion)
}

func (e *MissingFunctionError) Error() string {
	needs := fmt.Sprintf("a newer driver (this build's cuda.h is CUDA %s)", cudaVersion(headerVersion))
	if e.Needs > 0 {
		needs = "CUDA " + cudaVersion(e.Needs) + " or newer"
	}
	return fmt.Sprintf("the installed CUDA driver (CUDA %s) lacks %s, which needs %s: update the NVIDIA driver",
		cudaVersion(e.Driver), e.Symbol, needs)
}

// Unwrap returns errors.ErrUnsupported.
func (e *MissingFunctionError) Unwrap() error { return errors.ErrUnsupported }

// cudaVersion writes a driver API version as CUDA writes it: 12080 is "12.8".
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// sinceVersion is the driver API version that brought each driver symbol
// cuarray's backend calls that is younger than CUDA 4.0 (the CUDA Driver
// API reference, and cuda.h's versioned names).
var sinceVersion = map[string]int{
	"cuIpcGetMemHandle":             4010,
	"cuIpcOpenMemHandle":            4010,
	"cuIpcCloseMemHandle":           4010,
	"cuIpcOpenMemHandle_v2":         11000,
	"cuMemcpy3DAsync_v2":            3020,
	"cuMemcpy3D_v2":                 3020,
	"cuMemcpy2DAsync_v2":            3020,
	"cuMemcpy2DUnaligned_v2":        3020,
	"cuMemHostRegister_v2":          6050,
	"cuMemHostUnregister":           4000,
	"cuGetErrorName":                6000,
	"cuGetErrorString":              6000,
	"cuCtxGetFlags":                 7000,
	"cuPointerGetAttributes":        7000,
	"cuLaunchHostFunc":              10000,
	"cuDevicePrimaryCtxRelease_v2":  11000,
	"cuDevicePrimaryCtxReset_v2":    11000,
	"cuDevicePrimaryCtxSetFlags_v2": 11000,
	"cuDevicePrimaryCtxGetState":    7000,
	"cuDevicePrimaryCtxRetain":      7000,
	"cuLaunchKernel":                4000,
	"cuMemsetD8Async":               3020,
	"cuStreamDestroy_v2":            4000,
	"cuEventDestroy_v2":             4000,
	"cuMemGetAddressRange_v2":       3020,
	"cuMemHostGetDevicePointer_v2":  3020,
	"cuModuleLoadDataEx":            2010,
}

// inContext maps the error of a driver call made with the device's context
// current (Device.callAlways): CUDA_ERROR_INVALID_CONTEXT is then a handle
// of another context, driver.ErrInvalidValue, and CUDA_ERROR_NOT_FOUND from
// a function the driver lacks is a *MissingFunctionError. It runs on the
// thread that made the call.
func inContext(err error) error {
	var de *DriverError
	if err == nil || !errors.As(err, &de) {
		return err
	}
	switch de.Code {
	case codeInvalidContext:
		de.kind = driver.ErrInvalidValue
		de.Desc += " (a handle of another context: this device's context was current)"
	case codeNotFound:
		if sym := cu.TakeMissing(); sym != "" {
			return &MissingFunctionError{Symbol: sym, Needs: sinceVersion[sym], Driver: cu.Version()}
		}
	}
	return err
}
