package errline_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/errline"
)

// driverError is shaped as the cuda backend's DriverError: its message is
// the driver's, and it unwraps to the error kind (device.ErrContextFailed
// for a sticky result) without printing it.
type driverError struct{ code int }

func (e *driverError) Error() string {
	return fmt.Sprintf("CUDA_ERROR_ILLEGAL_ADDRESS (%d): an illegal memory access was encountered", e.code)
}

func (e *driverError) Unwrap() error { return device.ErrContextFailed }

// TestOfGPUFault: on a GPU the fault's text is the driver's, which does
// not repeat ErrContextFailed's message; each cleanup call returns a new
// error of that text. The repeats are dropped all the same.
func TestOfGPUFault(t *testing.T) {
	other := errors.New("write report: disk full")
	fault := func(op string) error { return fmt.Errorf("cuda: %s: %w", op, &driverError{700}) }
	err := fmt.Errorf("bench: %w", errors.Join(fault("copy HtoD"), fault("free 0x7f00"), other, fault("stream synchronize"), fault("stream close")))
	got := errline.Of(err)
	assert.NotContains(t, got, "\n")
	assert.Equal(t, 1, strings.Count(got, "CUDA_ERROR_ILLEGAL_ADDRESS"), "one mention of the fault: %s", got)
	assert.Equal(t, "bench: cuda: copy HtoD: "+(&driverError{700}).Error()+"; "+other.Error(), got)
}
