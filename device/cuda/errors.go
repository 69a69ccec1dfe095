//go:build cuda

package cuda

import (
	"fmt"
	"reflect"

	"github.com/cuarray/cuarray/device/driver"
)

// DriverError is a CUDA driver result other than success.
type DriverError struct {
	Code int    // the CUresult
	Name string // "CUDA_ERROR_OUT_OF_MEMORY"
	Desc string // the driver's description
	kind error  // the driver error kind it maps to, or nil
}

func (e *DriverError) Error() string { return fmt.Sprintf("%s (%d): %s", e.Name, e.Code, e.Desc) }

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
	return &DriverError{Code: c, Name: name, Desc: desc, kind: kindOf(c)}
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
