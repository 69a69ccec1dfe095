package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// Once its device is closed, a pool's cached bytes went with the device's
// memory (the device's Close freed its segments in the ledger): from the
// pool's next call on, the ledger's Cached is 0, not more than its
// Current, whether the device gives the pool its closed flag or only
// answers Closed, a free of a parked size included; a Release that cannot
// give the segments back leaves it so, and the pool, dropped, is
// collected. (Until that next call the ledger still shows what the pool
// last published: the pool is not told of the Close.)
func TestPoolCachedAfterDeviceClose(t *testing.T) {
	for _, tc := range closeReporters {
		t.Run(tc.name, func(t *testing.T) {
			dev := testdev.OpenOwned(t) // closed by the test itself
			led := dev.Ledger()
			collected := make(chan struct{})
			func() {
				p := pool.New(tc.wrap(dev))
				n := int64(1 + rand.IntN(64<<10))
				ptr, err := p.Alloc(n)
				require.NoError(t, err)
				parkable, err := p.Alloc(n)
				require.NoError(t, err)
				live, err := p.Alloc(int64(1 + rand.IntN(4<<20)))
				require.NoError(t, err)
				require.NoError(t, p.Free(ptr))
				before := led.Snapshot().Kinds[accounting.Device]
				require.Positive(t, before.Cached)
				require.Equal(t, p.Stats().Cached, before.Cached)

				require.NoError(t, dev.Close())
				assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Current, "the device's Close freed the segments")
				assert.NoError(t, p.Free(parkable), "a free of a parked size after the Close: the block goes back to the pool")
				after := led.Snapshot().Kinds[accounting.Device]
				assert.Zero(t, after.Cached, "cached bytes of a closed device (Current %d)", after.Current)
				assert.NoError(t, p.Free(live), "a free after the Close: the block goes back to the pool")
				assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Cached, "a free after the Close caches nothing")
				assert.ErrorIs(t, p.Release(), driver.ErrClosed, "the segments cannot be given back")
				assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Cached, "after Release")
				runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, collected)
			}()
			deadline := time.After(10 * time.Second)
			for {
				runtime.GC()
				select {
				case <-collected:
					assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Cached)
					return
				case <-deadline:
					t.Fatal("a pool of a closed device, released and dropped, was not collected: the ledger still refers to it")
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	}
}
