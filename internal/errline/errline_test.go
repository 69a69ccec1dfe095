package errline_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/errline"
)

// TestOf: a joined error prints as one line; after a device fault the
// cleanup's repeats of the fault are dropped, other errors kept.
func TestOf(t *testing.T) {
	fault := fmt.Errorf("sim: copy HtoD: %w", device.ErrContextFailed)
	other := errors.New("write report: disk full")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"one", other, other.Error()},
		{"joined", errors.Join(other, errors.New("close: bad")), other.Error() + "; close: bad"},
		{"fault and its repeats", fmt.Errorf("bench: %w", errors.Join(fault, fmt.Errorf("free: %w", device.ErrContextFailed), other)), "bench: " + fault.Error() + "; " + other.Error()},
		{"fault after another error", errors.Join(other, fault, fault), other.Error() + "; " + fault.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errline.Of(tc.err)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, "\n")
		})
	}
}
