package growable_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/growable"
	"github.com/cuarray/cuarray/internal/testdev"
)

// BenchmarkGrowStep times one growth step of a growable array (cuMemCreate,
// cuMemMap and cuMemSetAccess of one chunk of the recommended granularity)
// beside what it replaces, an allocation of the same size and the free of
// the one before (cuMemAlloc and cuMemFree), and reports both and their
// ratio (grow/malloc). A copy of the old contents, which growing without
// virtual memory would add, is not counted. The array is freed and
// reserved again, untimed, every 32 steps.
//
//	go test -run '^$' -bench GrowStep ./growable/
func BenchmarkGrowStep(b *testing.B) {
	dev := testdev.Open(b)
	g, err := dev.MemGranularity()
	require.NoError(b, err)
	chunk := g.Recommended
	const steps = 32
	var grow, malloc time.Duration
	var a *growable.Array
	var prev devarray.Ptr
	b.ResetTimer()
	for i := range b.N {
		if i%steps == 0 {
			if a != nil {
				require.NoError(b, a.Free())
			}
			a, err = growable.New(dev, devarray.Uint8, steps*int(chunk), growable.ChunkBytes(chunk))
			require.NoError(b, err)
		}
		start := time.Now()
		require.NoError(b, a.Grow((i%steps+1)*int(chunk)))
		grow += time.Since(start)

		start = time.Now()
		p, err := dev.Malloc(chunk)
		require.NoError(b, err)
		if prev != 0 {
			require.NoError(b, dev.Free(prev))
		}
		malloc += time.Since(start)
		prev = p
	}
	b.StopTimer()
	require.NoError(b, a.Free())
	require.NoError(b, dev.Free(prev))
	b.ReportMetric(float64(grow.Nanoseconds())/float64(b.N), "grow-ns/step")
	b.ReportMetric(float64(malloc.Nanoseconds())/float64(b.N), "malloc-free-ns/step")
	b.ReportMetric(float64(grow)/float64(malloc), "grow/malloc")
}
