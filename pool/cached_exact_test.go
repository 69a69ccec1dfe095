package pool_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/pool"
)

// Two pools on one small device, taken to its end: requests past its
// memory (OOM, the retry after a trim), reserve ratios giving segments
// back, pool limits, injected device failures, Trim. After every step the
// ledger's Cached is the pools' Reserved - InUse summed, and no more than
// its Current; snapshots and scopes popped meanwhile never see it
// negative. Release gives everything back.
func TestLedgerCachedExactAtTheDevicesEnd(t *testing.T) {
	const mem = 24 << 20
	dev, err := device.Open("sim:0?mem=24MiB&fail-alloc=" + []string{"37", "53", "71"}[rand.IntN(3)])
	require.NoError(t, err)
	defer dev.Close()
	led := dev.Ledger()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 19))
	pools := []*pool.Pool{pool.New(dev), pool.New(dev)}
	held := [][]devarray.Ptr{nil, nil}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			sc := led.Push("meanwhile")
			k := led.Snapshot().Kinds[accounting.Device]
			assert.GreaterOrEqual(t, k.Cached, int64(0))
			// Pools are asked one after another, so a segment one gave
			// back and another took meanwhile can be counted twice: each
			// pool's part is at most the device's memory.
			assert.LessOrEqual(t, k.Cached, int64(len(pools))*mem)
			popped, err := sc.Pop()
			assert.NoError(t, err)
			assert.GreaterOrEqual(t, popped.Kinds[accounting.Device].Cached, int64(0))
		}
	}()

	check := func(step int) {
		var sum int64
		for _, p := range pools {
			st := p.Stats()
			sum += st.Reserved - st.InUse
		}
		k := led.Snapshot().Kinds[accounting.Device]
		require.Equal(t, sum, k.Cached, "step %d: the ledger's cached bytes are the pools'", step)
		require.LessOrEqual(t, k.Cached, k.Current, "step %d", step)
	}
	for step := range 3000 {
		i := rng.IntN(2)
		p := pools[i]
		switch r := rng.IntN(100); {
		case r < 45 || len(held[i]) == 0:
			n := 1 + rng.Int64N(64<<10)
			switch rng.IntN(10) {
			case 0:
				n = 1 + rng.Int64N(30<<20) // past the device's memory, at times
			case 1, 2:
				n = 1<<20 + rng.Int64N(10<<20)
			}
			ptr, err := p.Alloc(n)
			if err != nil {
				require.True(t, errors.Is(err, device.ErrOutOfMemory) || errors.Is(err, device.ErrInjected), "step %d: %v", step, err)
			} else {
				held[i] = append(held[i], ptr)
			}
		case r < 90:
			j := rng.IntN(len(held[i]))
			require.NoError(t, p.Free(held[i][j]))
			held[i] = append(held[i][:j], held[i][j+1:]...)
		case r < 94:
			_, err := p.Trim()
			require.NoError(t, err)
		case r < 97:
			require.NoError(t, p.SetReserveRatio([]float64{0, 1, 1.25, 2}[rng.IntN(4)]))
		default:
			require.NoError(t, p.SetLimit([]int64{0, 4 << 20, 16 << 20}[rng.IntN(3)]))
		}
		check(step)
	}
	// Release with blocks still live: their segments stay, counted.
	for i, p := range pools {
		if len(held[i]) > 0 {
			assert.ErrorIs(t, p.Release(), pool.ErrInUse)
		}
	}
	check(-1)
	for i, p := range pools {
		for _, ptr := range held[i] {
			require.NoError(t, p.Free(ptr))
		}
		require.NoError(t, p.Release())
	}
	close(stop)
	wg.Wait()
	k := led.Snapshot().Kinds[accounting.Device]
	assert.Zero(t, k.Cached)
	assert.Zero(t, k.Current)
}
