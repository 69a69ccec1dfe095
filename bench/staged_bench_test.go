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

// BenchmarkStagedCeiling measures, interleaved in one run at 64 MiB, the
// host's memcpy ceiling (pageable→pinned on GOMAXPROCS goroutines), the
// direct path, and the staged path through a fixed ring of 4 chunks (4 MiB
// on a GPU and 512 KiB on sim, each filled whole; "before": the ring as it
// was first written) and through the ring the Copier sizes (chunks filled
// in part; "after"), both pipelined as every staged copy now is (see
// BenchmarkStagedPipeline), and reports the staged path's ratios to the
// ceiling and to direct, both ways:
//
//	go test -run '^$' -bench StagedCeiling -benchtime 5x ./bench
func BenchmarkStagedCeiling(b *testing.B) {
	dev := testdev.Open(b)
	const n = 64 << 20
	oldChunk := int64(4 << 20)
	if testdev.IsSim(dev) {
		oldChunk = transfer.SimChunkBytes
	}
	before, err := transfer.New(dev, transfer.WithRing(oldChunk, 4, 2))
	require.NoError(b, err)
	defer before.Close()
	after, err := transfer.New(dev)
	require.NoError(b, err)
	defer after.Close()
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(b, err)
	defer a.Free()
	buf, err := pinned.Alloc(dev, n, 0)
	require.NoError(b, err)
	defer buf.Free()
	src, back := testdev.RandomBytes(n), make([]byte, n)
	procs := runtime.GOMAXPROCS(0)
	type op struct {
		name string
		run  func() error
	}
	copyOp := func(name string, c *transfer.Copier, p transfer.Path, dir accounting.Direction) op {
		dst, s := transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8)
		if dir == accounting.DtoH {
			dst, s = transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a)
		}
		return op{name, func() error { return c.Copy(dst, s, transfer.Via(p)) }}
	}
	ops := []op{
		{"memcpy", func() error { parallelCopy(buf.Bytes(), src, procs); return nil }},
		copyOp("direct HtoD", after, transfer.PathDirect, accounting.HtoD),
		copyOp("direct DtoH", after, transfer.PathDirect, accounting.DtoH),
		copyOp("before HtoD", before, transfer.PathStaged, accounting.HtoD),
		copyOp("before DtoH", before, transfer.PathStaged, accounting.DtoH),
		copyOp("after HtoD", after, transfer.PathStaged, accounting.HtoD),
		copyOp("after DtoH", after, transfer.PathStaged, accounting.DtoH),
	}
	for _, o := range ops { // warm-up: pages touched, rings allocated
		require.NoError(b, o.run())
	}
	times := map[string][]time.Duration{}
	b.SetBytes(n)
	for b.Loop() {
		for _, o := range ops {
			start := time.Now()
			if err := o.run(); err != nil {
				b.Fatal(err)
			}
			times[o.name] = append(times[o.name], time.Since(start))
		}
	}
	require.Equal(b, src, back)
	median := func(name string) float64 {
		t := slices.Clone(times[name])
		slices.Sort(t)
		return t[len(t)/2].Seconds()
	}
	for _, dir := range []string{"HtoD", "DtoH"} {
		for _, when := range []string{"before", "after"} {
			staged := median(when + " " + dir)
			b.ReportMetric(median("memcpy")/staged, when+"_"+dir+"/memcpy")
			b.ReportMetric(median("direct "+dir)/staged, when+"_"+dir+"/direct")
		}
	}
	r := after.Ring()
	b.Logf("GOMAXPROCS %d; ring after: %d × %s on %d streams; memcpy %.2f GB/s", procs, r.Chunks, accounting.FormatBytes(r.ChunkBytes), r.Streams,
		float64(n)/median("memcpy")/1e9)
}
