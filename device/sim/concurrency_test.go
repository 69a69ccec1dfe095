package sim_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// TestConcurrentAllocCopyFree: 32 goroutines allocate, copy both ways and
// free, 100 000 rounds in all (-short: 10 000). Afterwards every kind's
// current bytes are 0 and allocations equal frees; run with -race.
func TestConcurrentAllocCopyFree(t *testing.T) {
	const workers = 32
	// 30 000 rounds: about a thousand a worker, each allocation meeting
	// others' frees and copies in every interleaving the scheduler tries;
	// 100 000 took 21 s under -race on 2 cores, 30 000 take 6 s.
	rounds := 30_000
	if testing.Short() || os.Getenv(sim.CheckEnv) != "" {
		// The stream race checker (make test-latency turns it on for every
		// sim device) judges each round's copies and free: under -race that
		// takes about 15 times as long, and this test is about the
		// allocator, which 10 000 rounds exercise as well.
		rounds = 10_000
	}
	dev := newDevice(t, sim.Config{Memory: 256 << 20})
	pinned, err := dev.HostAlloc(workers*4096, driver.Mapped)
	require.NoError(t, err)

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			// Each worker uploads from its own slice of one pinned buffer or from the Go heap.
			staging := pinned.Bytes[w*4096 : (w+1)*4096]
			heap := make([]byte, 4096)
			for r := w; r < rounds; r += workers {
				n := 1 + rng.IntN(1024)
				src := heap[:4*n]
				if r%2 == 0 {
					src = staging[:4*n]
				}
				for i := range src {
					src[i] = byte(rng.Uint32())
				}
				a, err := devarray.FromBytes(dev, src, devarray.Float32, n)
				if err != nil {
					t.Errorf("round %d: %v", r, err)
					return
				}
				v, err := a.Slice(0, 0, n, 2)
				if err == nil {
					got := make([]byte, v.NBytes())
					err = v.CopyTo(got)
					for i := 0; err == nil && i < int(v.Size()); i++ {
						if got[4*i] != src[8*i] {
							t.Errorf("round %d: element %d came back wrong", r, i)
							break
						}
					}
				}
				if ferr := a.Free(); err != nil || ferr != nil {
					t.Errorf("round %d: %v, free: %v", r, err, ferr)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, dev.HostFree(pinned))

	s := dev.Ledger().Snapshot()
	for k := accounting.Kind(0); k < accounting.NumKinds; k++ {
		ks := s.Kinds[k]
		assert.Zero(t, ks.Current, "%v: current bytes back to zero", k)
		assert.Equal(t, ks.Allocs, ks.Frees, "%v: allocs == frees", k)
		assert.Equal(t, ks.Allocated, ks.Freed, "%v: bytes allocated == bytes freed", k)
	}
	assert.Equal(t, int64(rounds), s.Kinds[accounting.Device].Allocs)
	assert.Equal(t, int64(rounds), s.CopyTotal(accounting.HtoD).Count, "one upload a round")
	assert.Equal(t, int64(rounds/2), s.Copies[accounting.HtoD][accounting.PathPinned].Count, "half of them from pinned memory")
	free, total, err := dev.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, total, free)
}
