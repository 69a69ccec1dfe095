//go:build cuda

package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda/conformance"
)

// An entry point leaves its caller's thread with the context it had:
// none, or another library's.
func TestEntryPointsRestoreTheCallersContext(t *testing.T) {
	if err := conformance.Init(); err != nil {
		t.Skipf("needs a CUDA driver and a GPU, or the emulated driver (-tags cuda,cudaemu): %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx, c := conformance.PrimaryRetain(0)
	require.Equal(t, conformance.Success, c, conformance.ErrorName(c))
	defer conformance.PrimaryRelease(0)
	for _, tc := range []struct {
		name string
		ctx  uintptr
	}{
		{"no context", 0},
		{"another library's", ctx},
	} {
		require.Equal(t, conformance.Success, conformance.CtxSetCurrent(tc.ctx))
		_, msg := deviceFromC("cuda:0")
		require.Empty(t, msg, "cuarray_device")
		cur, c := conformance.CtxGetCurrent()
		require.Equal(t, conformance.Success, c, conformance.ErrorName(c))
		assert.Equal(t, tc.ctx, cur, "%s: the caller's current context after cuarray_device", tc.name)
	}
}
