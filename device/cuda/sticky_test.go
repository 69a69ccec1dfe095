//go:build cuda

package cuda

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
)

// stickyChildEnv marks the process TestStickyFaultEndsTheProcessUse starts
// to take the fault: after it the GPU is of no use to the process.
const stickyChildEnv = "CUARRAY_STICKY_END_CHILD"

// TestStickyFaultEndsTheProcessUse checks what cuda.h says of a sticky
// error (CUDA_ERROR_ILLEGAL_ADDRESS): "any further CUDA work will return
// the same error. To continue using CUDA, the process must be terminated
// and relaunched". After a kernel's illegal address, pointer attributes
// and a stream's destroy report the fault; closing the Device and opening
// the GPU again fails with driver.ErrContextFailed and a message that says
// the process must be restarted, whether the primary context was reset or
// only released. The fault runs in a child process.
func TestStickyFaultEndsTheProcessUse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset bool // reset the primary context (cuDevicePrimaryCtxReset) after Close
	}{
		{"close and open", false},
		{"close, reset and open", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Getenv(stickyChildEnv) == "" {
				skipWithoutGPU(t)
				cmd := exec.Command(os.Args[0], "-test.run", "^TestStickyFaultEndsTheProcessUse$/^"+t.Name()[len("TestStickyFaultEndsTheProcessUse/"):]+"$", "-test.v", "-test.count=1")
				cmd.Env = append(os.Environ(), stickyChildEnv+"=1")
				out, err := cmd.CombinedOutput()
				t.Logf("child:\n%s", out)
				require.NoError(t, err, "the child that took the fault failed")
				return
			}
			stickyEnd(t, tc.reset)
		})
	}
}

// stickyEnd is the child's part of TestStickyFaultEndsTheProcessUse.
func stickyEnd(t *testing.T, reset bool) {
	d, err := Open(0)
	require.NoError(t, err)
	p, err := d.Malloc(4096)
	require.NoError(t, err)
	s, err := d.NewStream()
	require.NoError(t, err)
	other, err := d.NewStream()
	require.NoError(t, err)
	m, err := d.LoadModule(faultPTX)
	require.NoError(t, err)
	f, err := m.Function("fault")
	require.NoError(t, err)
	require.NoError(t, f.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, s, &driver.KernelArgs{}), "a launch returns when queued")
	require.ErrorIs(t, s.Synchronize(), driver.ErrContextFailed, "the kernel's illegal address")

	_, err = d.PointerInfo(p)
	assert.ErrorIs(t, err, driver.ErrContextFailed, "cuPointerGetAttributes after the fault: %v", err)
	st := other.(*stream)
	err = d.callAlways(func() error { return fromCu(st.s.Destroy()) })
	assert.ErrorIs(t, err, driver.ErrContextFailed, "cuStreamDestroy after the fault: %v", err)
	_, err = d.Malloc(256)
	assert.ErrorIs(t, err, driver.ErrContextFailed, "cuMemAlloc after the fault: %v", err)
	t.Logf("Close: %v", d.Close())
	if reset {
		t.Logf("cuDevicePrimaryCtxReset: %v", fromCu(d.dev.ResetPrimaryCtx()))
	}

	again, err := Open(0)
	if err == nil {
		_, merr := again.Malloc(256)
		again.Close()
		t.Fatalf("Open after the fault succeeded (a fresh context: Malloc %v); the process must be restarted first", merr)
	}
	assert.ErrorIs(t, err, driver.ErrContextFailed, "%v", err)
	assert.Contains(t, err.Error(), "restart the process", "the error says what to do")
	t.Logf("Open after the fault: %v", err)
}
