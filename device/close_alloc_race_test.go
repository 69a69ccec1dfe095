package device_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Allocations and frees racing Close: each either succeeds (Close frees
// what is left) or fails with an error wrapping ErrClosed; none panics, and once Close has
// returned and the racers are done the ledger holds nothing. An
// allocation the driver made while Close was taking the live ones is
// freed by the call that made it.
func TestAllocationsRacingClose(t *testing.T) {
	r := rand.For(t)
	for round := range 20 {
		dev := testdev.OpenOwned(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var unexpected []error
		running := make(chan struct{}, 4)
		for g := range 4 {
			wg.Add(1)
			managed := g%2 == 1
			n := int64(1 + r.IntN(64<<10))
			go func() {
				defer wg.Done()
				for i := 0; i < 1<<20; i++ { // until Close stops it
					if i == 1 {
						running <- struct{}{}
					}
					var p devarray.Ptr
					var err error
					if managed {
						p, err = dev.MallocManaged(n, devarray.AttachGlobal)
					} else {
						p, err = dev.Malloc(n)
					}
					if err == nil && r.IntN(2) == 0 { // half are freed again, half left for Close
						err = dev.Free(p)
					}
					if err != nil {
						if !errors.Is(err, device.ErrClosed) && !errors.Is(err, device.ErrOutOfMemory) { // full before Close came: it stops
							mu.Lock()
							unexpected = append(unexpected, err)
							mu.Unlock()
						}
						if i == 0 { // stopped before it said it was running
							running <- struct{}{}
						}
						return
					}
				}
			}()
		}
		for range 4 { // every racer is allocating, or stopped
			<-running
		}
		require.NoError(t, dev.Close(), "round %d", round)
		wg.Wait()
		assert.Empty(t, unexpected, "round %d: an allocation racing Close failed otherwise than ErrClosed", round)
		snap := dev.Ledger().Snapshot()
		for _, kind := range []accounting.Kind{accounting.Device, accounting.Managed} {
			assert.Zero(t, snap.Kinds[kind].Current, "round %d: %v bytes still counted", round, kind)
		}
	}
}
