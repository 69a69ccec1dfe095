package bench_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/internal/testdev"
)

// BenchmarkFBP reconstructs the same scan in both modes, the pair whose
// ratio the FBP comparison reports; torch_fbp.py in peers/ is the third
// column on a GPU. Besides the time it reports the ledger's bytes across
// host↔device and the device's peak, per reconstruction. The size is one
// sim reconstructs in a fraction of a second; the GPU figures at 512³ come
// from `bash .gpu/bench.sh` (make bench-gpu).
func BenchmarkFBP(b *testing.B) {
	dev := testdev.Open(b)
	g := tomo.Geometry{Size: 64, Angles: 90, Slices: 8}
	scan, err := tomo.Acquire(dev, g, nil)
	require.NoError(b, err)
	for _, mode := range tomo.Modes {
		b.Run(string(mode), func(b *testing.B) {
			var last *tomo.Result
			for b.Loop() {
				res, err := tomo.Reconstruct(dev, g, scan.Sinograms, mode, nil)
				if err != nil {
					b.Fatal(err)
				}
				last = res
			}
			b.ReportMetric(float64(last.Traffic.Crossed()), "host-device-B/op")
			b.ReportMetric(float64(last.Traffic.DevicePeak), "device-peak-B")
			b.SetBytes(g.SinogramBytes())
		})
	}
}
