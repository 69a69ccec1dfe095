package devarray_test

import (
	"math"
	"testing"
	"time"

	"github.com/cuarray/cuarray/devarray"
)

// BenchmarkStridedDownload copies a 4096×4096 float32 array to the host
// contiguous and as its transpose (one pack kernel and one contiguous
// copy), in the same run, and reports each best time and
// transposed/contiguous; the strided download goal is at most 1.5 on a GPU.
//
//	go test -run '^$' -bench StridedDownload -benchtime 5x ./devarray
func BenchmarkStridedDownload(b *testing.B) {
	dev := newDev(b)
	const n = 4096
	a, err := devarray.FromHost(dev, randomFloat32(n*n), n, n)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Free()
	t, err := a.Transpose()
	if err != nil {
		b.Fatal(err)
	}
	host := make([]byte, a.NBytes())
	best := [2]time.Duration{math.MaxInt64, math.MaxInt64}
	for _, v := range []*devarray.DevArray{a, t} { // warm-up
		if err := v.CopyTo(host); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(2 * a.NBytes())
	b.ResetTimer()
	for range b.N {
		for i, v := range []*devarray.DevArray{a, t} {
			start := time.Now()
			if err := v.CopyTo(host); err != nil {
				b.Fatal(err)
			}
			best[i] = min(best[i], time.Since(start))
		}
	}
	b.StopTimer()
	b.ReportMetric(best[0].Seconds()*1e3, "contiguous-ms")
	b.ReportMetric(best[1].Seconds()*1e3, "transposed-ms")
	b.ReportMetric(best[1].Seconds()/best[0].Seconds(), "transposed/contiguous")
}
