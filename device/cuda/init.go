//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/device/driver"
)

// InitError is a failed start of the driver: no GPU answered. Either the
// driver library could not be loaded (Err is a *cu.LoadError: libcuda.so.1
// is not installed) or cuInit failed (Err is a *DriverError: no device, no
// kernel module, or a driver too old for the library).
type InitError struct {
	Err error
}

func (e *InitError) Error() string {
	var le *cu.LoadError
	if errors.As(e.Err, &le) {
		return fmt.Sprintf("no CUDA driver (%s)", le.Msg)
	}
	return fmt.Sprintf("no CUDA GPU answered (cuInit: %v)", e.Err)
}

// Unwrap returns the cause and driver.ErrNoDevice, so errors.Is(err,
// driver.ErrNoDevice) holds for every way the driver can fail to start.
func (e *InitError) Unwrap() []error { return []error{e.Err, driver.ErrNoDevice} }

// Init starts the CUDA driver the first time it is called (the patched
// gorgonia.org/cu loads libcuda.so.1, then calls cuInit) and returns that
// result every time: nil, or an *InitError. NumDevices and Open call it;
// nothing else needs to.
func Init() error {
	if err := fromCu(cu.Init()); err != nil {
		return &InitError{Err: err}
	}
	return nil
}
