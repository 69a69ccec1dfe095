//go:build cuda && cudaemu && linux

package main

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda/conformance"
	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// finding03Child names the case a child process of
// TestFinding03FirstCallRestoresCallersContext plays.
const finding03Child = "CUARRAY_TEST_FINDING03_CHILD"

// The first entry point a process calls, the one that starts the driver,
// leaves its caller's thread with the context it had. Another library
// (CuPy, PyTorch) calls libcuda straight and may have a context current
// before cuarray has started the driver; until cuarray's cu.Init, every
// driver call through its stubs answers CUDA_ERROR_NOT_INITIALIZED, so an
// entry point that saved the caller's context only through them saved
// nothing and left the primary context of the device it opened current.
// Each case runs in a process of its own, where cuarray has not started
// the driver, with two emulated GPUs; the other library plays with the
// emulated driver's Foreign calls, as straight calls into libcuda.
func TestFinding03FirstCallRestoresCallersContext(t *testing.T) {
	if c := os.Getenv(finding03Child); c != "" {
		finding03InChild(t, c)
		return
	}
	for _, tc := range []struct{ name, child string }{
		{"no context current", "none"},
		{"the primary context of GPU 0 current, cuarray opens GPU 1", "gpu0"},
		{"the primary context of GPU 1 current, cuarray opens GPU 1", "gpu1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestFinding03FirstCallRestoresCallersContext$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), finding03Child+"="+tc.child, emulated.EnvVar+"=devices=2")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the child process:\n%s", out)
			assert.Contains(t, string(out), "--- PASS", "the child ran its case:\n%s", out)
		})
	}
}

// finding03InChild is one case of TestFinding03FirstCallRestoresCallersContext,
// in its own process.
func finding03InChild(t *testing.T, child string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, c := conformance.CtxGetCurrent()
	require.Equal(t, conformance.NotInitialized, c, "cuarray has not started the driver in this process yet: %s", conformance.ErrorName(c))
	require.Equal(t, conformance.Success, emulated.ForeignInit(), "the other library's cuInit")
	var want uintptr
	switch child {
	case "gpu0", "gpu1":
		dev := map[string]int{"gpu0": 0, "gpu1": 1}[child]
		ctx, c := emulated.ForeignPrimaryRetain(dev)
		require.Equal(t, conformance.Success, c, "the other library retains GPU %d's primary context", dev)
		defer emulated.ForeignPrimaryRelease(dev)
		require.Equal(t, conformance.Success, emulated.ForeignCtxSetCurrent(ctx))
		want = ctx
	}
	_, msg := deviceFromC("cuda:1")
	require.Empty(t, msg, "cuarray_device")
	cur, c := emulated.ForeignCtxGetCurrent()
	require.Equal(t, conformance.Success, c)
	assert.Equal(t, want, cur, "%s: the caller's current context after the first entry point", child)
}
