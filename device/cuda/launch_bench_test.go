//go:build cuda

package cuda

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/kernel"
)

// BenchmarkLaunchEmpty3Arrays launches an empty kernel with three array
// arguments (device/kernel/testdata/faults.ptx's empty) one way a sub-
// benchmark: bare, cuLaunchKernel in a loop on a thread whose context is
// current, the floor; async, package kernel's LaunchAsync, which checks
// the arrays, keeps them alive and switches the context per launch; and
// async/bare, their ratio (the goal on a GPU: at most 1.2). Each times
// queued launches, then waits for them.
func BenchmarkLaunchEmpty3Arrays(b *testing.B) {
	d := open(b)
	ptx, err := os.ReadFile("../kernel/testdata/faults.ptx")
	require.NoError(b, err)
	mod, err := kernel.Load(d, string(ptx))
	require.NoError(b, err)
	defer mod.Close()
	k, err := mod.Kernel("empty")
	require.NoError(b, err)
	var arrays [3]*devarray.DevArray
	for i := range arrays {
		arrays[i], err = devarray.Empty(d, devarray.Float32, 1024)
		require.NoError(b, err)
		defer arrays[i].Free()
	}
	s, err := d.NewStream()
	require.NoError(b, err)
	defer s.Close()
	cs := cstream(s.(*stream).s)
	cfg := kernel.Grid1D(32, 32)
	var args [3]uint64
	for i, a := range arrays {
		args[i] = uint64(a.Ptr())
	}
	params := make([]byte, 24)
	for i, p := range args {
		for j := range 8 {
			params[8*i+j] = byte(p >> (8 * j))
		}
	}
	offsets := []int{0, 8, 16}
	var bareLaunch func() error
	for _, img := range d.mods.loaded {
		if f, ok := img.funcs["empty"]; ok && img.src == string(ptx) {
			bareLaunch = func() error { return check(launch(f, cfg.Grid, cfg.Block, 0, cs, params, offsets)) }
		}
	}
	require.NotNil(b, bareLaunch, "the empty kernel, as Kernel looked it up")
	var bare, api float64
	b.Run("bare", func(b *testing.B) {
		err := d.call(func() error {
			for b.Loop() {
				if err := bareLaunch(); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(b, err)
		require.NoError(b, s.Synchronize())
		bare = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("async", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.LaunchAsync(s, cfg, kernel.In(arrays[0]), kernel.In(arrays[1]), kernel.InOut(arrays[2])); err != nil {
				b.Fatal(err)
			}
		}
		require.NoError(b, s.Synchronize())
		api = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	if bare > 0 && api > 0 {
		b.Run("async-over-bare", func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(api/bare, "x-bare")
		})
	}
}
