package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// The ledger's cached device bytes are the sum of its pools' Reserved -
// InUse once they are done, with several pools on one device allocating
// and freeing (fast path and not) while snapshots are taken (never
// negative meanwhile), and zero once the pools have given their memory back.
func TestLedgerCachedIsThePoolsSum(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	pools := []*pool.Pool{pool.New(dev), pool.New(dev), pool.New(dev)}
	stop := make(chan struct{})
	snaps := make(chan int)
	started := make(chan struct{})
	go func() { // snapshots meanwhile: never negative, never past what the device gave
		n := 0
		defer func() { snaps <- n }()
		for {
			k := led.Snapshot().Kinds[accounting.Device]
			assert.GreaterOrEqual(t, k.Cached, int64(0))
			if n++; n == 1 {
				close(started) // the pools start once snapshots are being taken
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	<-started
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []devarray.Ptr
			for range 400 {
				if len(held) > 0 && rand.IntN(2) == 0 {
					i := rand.IntN(len(held))
					assert.NoError(t, p.Free(held[i]))
					held = append(held[:i], held[i+1:]...)
					continue
				}
				n := int64(1 + rand.IntN(64<<10))
				if rand.IntN(8) == 0 {
					n = int64(1 + rand.IntN(4<<20)) // past the fast path's sizes
				}
				ptr, err := p.Alloc(n)
				if !assert.NoError(t, err) {
					return
				}
				held = append(held, ptr)
			}
			for _, ptr := range held {
				assert.NoError(t, p.Free(ptr))
			}
		}()
	}
	wg.Wait()
	close(stop)
	assert.Greater(t, <-snaps, 1, "snapshots were taken while the pools ran")

	var sum int64
	for _, p := range pools {
		st := p.Stats()
		assert.Zero(t, st.InUse)
		sum += st.Reserved - st.InUse
	}
	assert.Positive(t, sum)
	assert.Equal(t, sum, led.Snapshot().Kinds[accounting.Device].Cached, "the pools' cached bytes, summed")
	for _, p := range pools {
		require.NoError(t, p.Release())
	}
	assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Cached)
	assert.Zero(t, led.Current(accounting.Device))
}
