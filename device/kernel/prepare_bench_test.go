package kernel

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/sim"
)

// BenchmarkPrepare3Arrays is the Go-side checking of a launch with three
// array arguments (live, device, dtype, alignment, read-only, contiguity)
// and the packing of its parameters: what package kernel adds to a bare
// cuLaunchKernel before the driver is called.
func BenchmarkPrepare3Arrays(b *testing.B) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(b, err)
	defer dev.Close()
	var arrays [3]*devarray.DevArray
	for i := range arrays {
		arrays[i], err = devarray.Empty(dev, devarray.Float32, 64, 64)
		require.NoError(b, err)
		defer arrays[i].Free()
	}
	k := &Kernel{m: &Module{dev: dev, id: dev.DeviceID()}, name: "empty"}
	cfg := Grid1D(4096, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l, err := k.prepare(cfg, []Arg{In(arrays[0]).Of(devarray.Float32), In(arrays[1]).Contiguous(), InOut(arrays[2])})
		if err != nil || len(l.ranges) != 3 {
			b.Fatal(err)
		}
	}
}
