package interop_test

import (
	"errors"
	"testing"

	"github.com/cuarray/cuarray/devarray"
)

// skipWithoutIPC skips a test whose IPC export failed because the device
// cannot do IPC here: sim without Linux's memfd (macOS, or the
// sim_nomemfd build tag) says errors.ErrUnsupported. It frees the arrays
// given first, which the test would have freed.
func skipWithoutIPC(t *testing.T, err error, free ...*devarray.DevArray) {
	t.Helper()
	if errors.Is(err, errors.ErrUnsupported) {
		for _, a := range free {
			a.Free()
		}
		t.Skipf("IPC is not available here: %v", err)
	}
}
