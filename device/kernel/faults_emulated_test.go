//go:build cuda && cudaemu && linux

package kernel_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// childTestEnv names the test a child process runs the body of.
const childTestEnv = "CUARRAY_KERNEL_FAULT_CHILD"

// inChild reports whether the test runs in a child process of its own
// (then the caller runs the body), else runs it in one on the emulated
// driver with cfg and checks that it passed: a fault spoils the device
// for the rest of its process, as on a GPU.
func inChild(t *testing.T, cfg string) bool {
	t.Helper()
	if os.Getenv(childTestEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+strings.ReplaceAll(t.Name(), "/", "$/^")+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childTestEnv+"="+t.Name(), emulated.EnvVar+"="+cfg)
	out, err := cmd.CombinedOutput()
	t.Logf("child with %s=%q:\n%s", emulated.EnvVar, cfg, out)
	require.NoError(t, err, "the child failed")
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the child ran the test")
	return false
}

// TestEmulatedDriverFaultsNameKernelLineAndArgument: on the emulated
// driver, the Go error of a launch that faults or breaks its declarations
// names the kernel, the PTX line, the thread and the argument, as sim's
// does, beside the driver's result, and wraps the driver's sentinel
// (driver.ErrContextFailed for a fault, driver.ErrInvalidValue for a
// refusal). Each case runs in a child process of its own.
func TestEmulatedDriverFaultsNameKernelLineAndArgument(t *testing.T) {
	for _, tc := range faultCases() {
		t.Run(tc.name, func(t *testing.T) {
			if !inChild(t, "devices=2") {
				return
			}
			dev, err := device.Open("cuda:0")
			require.NoError(t, err)
			defer dev.Close()
			tc.check(t, dev, true)
		})
	}
}
