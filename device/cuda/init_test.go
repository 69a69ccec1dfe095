//go:build cuda

package cuda

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/device/driver"
)

// skipWithoutGPU skips a test that needs a GPU when cuInit fails.
func skipWithoutGPU(t testing.TB) {
	t.Helper()
	if err := Init(); err != nil {
		t.Skipf("needs a GPU: %v", err)
	}
}

// TestStartsWithoutGPU runs where the driver does not start: on CI,
// Debian's libcuda1 and no GPU, so cuInit fails; in CI's check without the
// library, dlopen fails. This test binary started, which upstream
// gorgonia.org/cu forbids (its init exits; linked with -lcuda, the dynamic
// linker refuses to start it without libcuda.so.1), and every way in is an
// error wrapping driver.ErrNoDevice that says why. Where a GPU answers it
// checks the other side.
func TestStartsWithoutGPU(t *testing.T) {
	initErr := Init()
	if initErr == nil {
		n, err := NumDevices()
		require.NoError(t, err)
		assert.Positive(t, n, "cuInit succeeded, so the driver sees a GPU")
		t.Skip("a GPU answered: the no-GPU path is CI's")
	}
	assert.Equal(t, initErr, Init(), "the driver is started once; later calls give that result")
	var ie *InitError
	require.ErrorAs(t, initErr, &ie)
	assert.ErrorIs(t, initErr, driver.ErrNoDevice)
	t.Logf("Init: %v", initErr)
	var le *cu.LoadError
	loaded := !errors.As(initErr, &le)
	if loaded {
		assert.Regexp(t, `^no CUDA GPU answered \(cuInit: CUDA_ERROR_[A-Z_]+ \(\d+\): .+\)$`, initErr.Error())
		assert.Positive(t, cu.Version(), "libcuda is loaded: cuDriverGetVersion answers without a GPU")
	} else {
		assert.Regexp(t, `^no CUDA driver \(.*libcuda\.so\.1.*\)$`, initErr.Error())
		assert.Equal(t, -1, cu.Version(), "no driver: every call is NotInitialized")
	}

	tests := []struct {
		name string
		call func() error
	}{
		{"NumDevices", func() error { _, err := NumDevices(); return err }},
		{"Open(0)", func() error { _, err := Open(0); return err }},
		{"Open(3)", func() error { _, err := Open(3); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			assert.ErrorIs(t, err, driver.ErrNoDevice)
			assert.True(t, errors.As(err, &ie), "%v", err)
			assert.Contains(t, err.Error(), initErr.Error())
		})
	}
}
