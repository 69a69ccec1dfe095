//go:build cuda && cudaemu && linux

package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/internal/testdev"
)

// TestLaunchCostsTwoDriverCallsBeyondTheLaunch counts, on the emulated
// driver, the driver calls of an async launch of an empty kernel with
// three array arguments beyond cuLaunchKernel itself: the context switch
// and the record of the Op's event, which share one batch, and the
// module's occasional query of whether its launches are done. The goal is
// at most 2 a launch.
func TestLaunchCostsTwoDriverCallsBeyondTheLaunch(t *testing.T) {
	dev := testdev.Open(t)
	k, _ := faultyKernel(t, dev, "empty")
	var arrays [3]*devarray.DevArray
	for i := range arrays {
		a, err := devarray.FromHost(dev, randomFloats(1024))
		require.NoError(t, err)
		defer a.Free()
		arrays[i] = a
	}
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	launch := func() *kernel.Op {
		op, err := k.LaunchAsync(s, kernel.Grid1D(32, 32), kernel.In(arrays[0]), kernel.In(arrays[1]), kernel.InOut(arrays[2]))
		require.NoError(t, err)
		return op
	}
	for range 128 { // the first launches make the events the later ones reuse
		launch()
	}
	require.NoError(t, s.Synchronize())
	const n = 256
	before := emulated.Calls()
	for range n {
		launch()
	}
	after := emulated.Calls()
	require.NoError(t, s.Synchronize())
	var total int64
	for name, c := range after {
		if d := c - before[name]; d != 0 {
			total += d
			t.Logf("%-24s %6d  (%.2f a launch)", name, d, float64(d)/n)
		}
	}
	launches := after["cuLaunchKernel"] - before["cuLaunchKernel"]
	require.Equal(t, int64(n), launches)
	beyond := float64(total-launches) / n
	t.Logf("driver calls beyond cuLaunchKernel: %.2f a launch", beyond)
	assert.LessOrEqual(t, beyond, 2.0)
}
