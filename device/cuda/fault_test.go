//go:build cuda

package cuda

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// faultPTX is a kernel that stores to address 8: an illegal address, the
// fault sim's fail-fault emulates.
const faultPTX = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry fault()\n{\n" +
	"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\tmov.u64 %rd1, 8;\n\tmov.u32 %r1, 1;\n" +
	"\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"

// faultChildEnv marks the process TestStickyFault starts to take the fault:
// a sticky error spoils CUDA for the whole process, so the tests after it
// must not share the fault's process.
const faultChildEnv = "CUARRAY_STICKY_FAULT_CHILD"

// TestStickyFault checks, on a GPU, what sim's fail-fault emulates: after
// a kernel's illegal address, the stream's Synchronize and every later
// call fail with driver.ErrContextFailed, and Close still returns and
// brings the ledger to zero. It runs the fault in a child process.
func TestStickyFault(t *testing.T) {
	skipWithoutGPU(t)
	if os.Getenv(faultChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestStickyFault$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), faultChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		require.NoError(t, err, "the child that took the fault failed")
		return
	}
	d, err := Open(0)
	require.NoError(t, err)
	p, err := d.Malloc(4096)
	require.NoError(t, err)
	s, err := d.NewStream()
	require.NoError(t, err)
	ev, err := d.NewEvent()
	require.NoError(t, err)
	m, err := d.LoadModule(faultPTX)
	require.NoError(t, err)
	f, err := m.Function("fault")
	require.NoError(t, err)
	require.NoError(t, f.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, s, &driver.KernelArgs{}), "a launch returns when queued")

	err = s.Synchronize()
	require.ErrorIs(t, err, driver.ErrContextFailed, "%v", err)
	t.Logf("the fault: %v", err)
	for name, call := range map[string]func() error{
		"Malloc":             func() error { _, err := d.Malloc(256); return err },
		"CopyHtoD":           func() error { return d.CopyHtoD(p, make([]byte, 16)) },
		"Stream.Synchronize": s.Synchronize,
		"Record":             func() error { return s.Record(ev) },
		"Event.Query":        func() error { _, err := ev.Query(); return err },
		"Free":               func() error { return d.Free(p) },
	} {
		err := call()
		assert.ErrorIs(t, err, driver.ErrContextFailed, "%s after the fault: %v", name, err)
	}
	t.Logf("Close: %v", d.Close())
	assert.Zero(t, d.Ledger().Current(accounting.Device), "Close lets go of the device memory in the ledger")
}
