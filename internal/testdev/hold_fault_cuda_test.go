//go:build cuda

package testdev_test

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
)

// holdFaultChildEnv names, in the child process that
// TestHoldAfterFaultFailsWithTheStickyError starts, the hold it checks.
const holdFaultChildEnv = "CUARRAY_HOLD_FAULT_CHILD"

// faultPTX is a kernel that stores to address 8: an illegal address.
const faultPTX = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry fault()\n{\n" +
	"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\tmov.u64 %rd1, 8;\n\tmov.u32 %r1, 1;\n" +
	"\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"

// fatalTB is a failingTB whose Fatalf, as testing's, ends the goroutine
// that calls it.
type fatalTB struct{ *failingTB }

func (f fatalTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// gateTime is how long the kernel that faults waits behind a gate: the
// hold under test is queued behind it by then.
const gateTime = time.Second

// holdFaultTime bounds how long a hold behind a fault may take to fail
// the test: far less than the hold deadline and PeekDeadline.
const holdFaultTime = 8 * time.Second

// A hold queued on the cuda backend's stream behind a kernel that faults
// is never reached: cuLaunchHostFunc's function "will not be called in the
// event of an error in the CUDA context". Hold and HoldReached then fail
// the test with the sticky error within seconds, instead of waiting to the
// hold deadline or PeekDeadline. Each runs in a child process, as the fault
// ends the process's use of the GPU.
func TestHoldAfterFaultFailsWithTheStickyError(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(testing.TB, driver.Stream) func()
	}{
		{"Hold", testdev.Hold},
		{"HoldReached", testdev.HoldReached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch os.Getenv(holdFaultChildEnv) {
			case tc.name:
				holdAfterFault(t, tc.hold)
			case "":
				cmd := exec.Command(os.Args[0], "-test.run", "^TestHoldAfterFaultFailsWithTheStickyError$/^"+tc.name+"$", "-test.v", "-test.count=1")
				cmd.Env = append(os.Environ(), holdFaultChildEnv+"="+tc.name, testdev.HoldDeadlineEnv+"=30s")
				out, err := cmd.CombinedOutput()
				t.Logf("child:\n%s", out)
				if strings.Contains(string(out), "--- SKIP") {
					t.Skip("the child skipped")
				}
				require.NoError(t, err, "the child that took the fault failed")
			}
		})
	}
}

// holdAfterFault is the child's part: hold a stream behind a fault.
func holdAfterFault(t *testing.T, hold func(testing.TB, driver.Stream) func()) {
	dev, err := device.Open("cuda:0")
	if err != nil {
		t.Skipf("needs the cuda backend (a GPU or the emulated driver): %v", err)
	}
	defer dev.Close()
	k, ok := dev.(driver.KernelRunner)
	require.True(t, ok, "%T runs kernels", dev)
	m, err := k.LoadModule(faultPTX)
	require.NoError(t, err)
	f, err := m.Function("fault")
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	gate, ok := s.(driver.Holder)
	require.True(t, ok, "%T can be held", s)
	open, err := gate.Hold() // the kernel faults once the hold below is queued behind it
	require.NoError(t, err)
	defer open()
	require.NoError(t, f.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, s, &driver.KernelArgs{}), "a launch returns when queued")

	tb := fatalTB{&failingTB{TB: t}}
	start := time.Now()
	time.AfterFunc(gateTime, open) // HoldReached returns only once reached: open the gate from aside
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		hold(tb, s)
	}()
	deadline := time.After(holdFaultTime)
	for len(tb.reported()) == 0 {
		select {
		case <-deadline:
			t.Fatalf("no failure %v after holding a stream behind a fault", holdFaultTime)
		case <-time.After(10 * time.Millisecond):
		}
	}
	<-returned
	got := tb.reported()
	t.Logf("after %v: %q", time.Since(start).Round(time.Millisecond), got)
	require.Len(t, got, 1, "one failure")
	assert.Contains(t, got[0], "the stream failed before the hold was reached", "the failure says why")
	assert.Contains(t, got[0], "CUDA_ERROR_ILLEGAL_ADDRESS", "the failure carries the sticky error")
}
