//go:build cuda && cudaemu && linux

package kernel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/kernel"
)

// TestEmulatedDriverReportsAWriteToAnInArray: on the emulated driver, a
// kernel that writes an array its launch declared In is stopped and
// reported as a misuse naming the kernel, its PTX line and the argument,
// and the launch fails; the ledger counts it with the bytes it touched.
// (The device is opened directly: testdev.Open fails a test that leaves
// a misuse behind, as this one must.)
func TestEmulatedDriverReportsAWriteToAnInArray(t *testing.T) {
	dev, err := device.Open("cuda:0")
	require.NoError(t, err)
	defer dev.Close()
	k, text := faultyKernel(t, dev, "add_into_input")
	const n = 64
	x, err := devarray.FromHost(dev, randomFloats(n))
	require.NoError(t, err)
	defer x.Free()
	y, err := devarray.FromHost(dev, randomFloats(n))
	require.NoError(t, err)
	defer y.Free()
	before := len(emulated.Misuses())
	err = k.Launch(kernel.Grid1D(n, 32), kernel.In(x), kernel.InOut(y), kernel.I32(n))
	require.Error(t, err)
	misuses := emulated.Misuses()[before:]
	require.Len(t, misuses, 1)
	line := ptxLine(t, text, "add_into_input", "st.global.u32")
	assert.Contains(t, misuses[0], fmt.Sprintf("add_into_input: write to read-only memory at line %d", line))
	assert.Contains(t, misuses[0], "in argument 1 (In): the array is declared read-only")
	ks := dev.Ledger().Snapshot().Kernels
	require.Len(t, ks, 1)
	assert.Equal(t, "add_into_input", ks[0].Name)
	assert.Positive(t, ks[0].Read)
	assert.True(t, strings.HasPrefix(ks[0].Name, "add_"))
}
