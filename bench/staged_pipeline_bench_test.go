package bench

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// BenchmarkStagedPipeline holds the pipelined staged ring (the ring the
// Copier sizes, its workers copying each chunk together while the chunk
// before is in DMA) to the host's memcpy ceiling, at the goal's sizes,
// 64 MiB and 1 GiB: interleaved in one run, a plain pageable→pinned
// memcpy of the same size on GOMAXPROCS goroutines and staged copies
// HtoD and DtoH; it reports each direction's time ratio to the memcpy's
// (1 is the ceiling, the GPU goal is ≥ 0.9) and the memcpy's GB/s:
//
//	go test -run '^$' -bench StagedPipeline -benchtime 3x ./bench
//
// A size the device's memory cannot hold is skipped, with the reason: the
// test device on sim has 256 MiB unless CUARRAY_TEST_DEVICE gives more
// ('sim:0?mem=2GiB'). On sim the "DMA" is a memcpy too, so that every
// byte is copied twice on the CPU: there the ratio can only say how much
// the ring adds to those two copies.
func BenchmarkStagedPipeline(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64MiB", 64 << 20}, {"1GiB", 1 << 30}} {
		b.Run(size.name, func(b *testing.B) { stagedPipeline(b, size.n) })
	}
}

func stagedPipeline(b *testing.B, n int) {
	dev := testdev.Open(b)
	if total := dev.Info().TotalMemory; total < int64(n) {
		b.Skipf("%s does not fit the device's %s (on sim: CUARRAY_TEST_DEVICE='sim:0?mem=2GiB')",
			accounting.FormatBytes(int64(n)), accounting.FormatBytes(total))
	}
	c, err := transfer.New(dev)
	require.NoError(b, err)
	defer func() { require.NoError(b, c.Close()) }()
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(b, err)
	defer func() { require.NoError(b, a.Free()) }()
	buf, err := pinned.Alloc(dev, int64(n), 0)
	require.NoError(b, err)
	defer func() { require.NoError(b, buf.Free()) }()
	src, back := testdev.RandomBytes(n), make([]byte, n)
	procs := runtime.GOMAXPROCS(0)
	ops := []struct {
		name string
		run  func() error
	}{
		{"memcpy", func() error { parallelCopy(buf.Bytes(), src, procs); return nil }},
		{"HtoD", func() error {
			return c.Copy(transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8), transfer.Via(transfer.PathStaged))
		}},
		{"DtoH", func() error {
			return c.Copy(transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a), transfer.Via(transfer.PathStaged))
		}},
	}
	runtime.GC()            // the buffers' garbage collected, not marked while the copies are timed
	for _, o := range ops { // warm-up: pages touched, the ring allocated
		require.NoError(b, o.run())
	}
	times := map[string][]time.Duration{}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, o := range ops {
			start := time.Now()
			if err := o.run(); err != nil {
				b.Fatal(err)
			}
			times[o.name] = append(times[o.name], time.Since(start))
		}
	}
	require.Equal(b, src, back, "the data made the round trip")
	median := func(name string) float64 {
		t := slices.Clone(times[name])
		slices.Sort(t)
		return t[len(t)/2].Seconds()
	}
	for _, dir := range []string{"HtoD", "DtoH"} {
		b.ReportMetric(median("memcpy")/median(dir), dir+"/memcpy")
	}
	b.ReportMetric(float64(n)/median("memcpy")/1e9, "memcpy_GB/s")
	r := c.Ring()
	b.Logf("GOMAXPROCS %d; ring %d × %s on %d streams; staged HtoD %.2f, DtoH %.2f, memcpy %.2f GB/s (%v)", procs, r.Chunks,
		accounting.FormatBytes(r.ChunkBytes), r.Streams, float64(n)/median("HtoD")/1e9, float64(n)/median("DtoH")/1e9,
		float64(n)/median("memcpy")/1e9, dev.Info().Model)
}
