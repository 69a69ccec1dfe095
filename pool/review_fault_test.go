package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// TestFaultFastPathAfterPoll: the allocation whose poll of a pending free
// is the pool's first sight of the fault (the event's query fails) must
// fail with it, as every later one does: the fast path handed out a parked
// block all the same, after the pool had noted the fault.
func TestFaultFastPathAfterPoll(t *testing.T) {
	for _, size := range []int64{256, 4096, 1 << 20, 3 << 20} { // parked sizes, then blocks of the free index
		dev, err := sim.New(sim.Config{Memory: 64 << 20})
		require.NoError(t, err)
		p := pool.New(dev)
		s, err := dev.NewStream()
		require.NoError(t, err)
		parked, err := p.Alloc(size)
		require.NoError(t, err)
		require.NoError(t, dev.CopyHtoD(parked, testdev.RandomBytes(int(size))))
		require.NoError(t, p.Free(parked)) // parked: the fast path hands it out again
		onStream, err := p.AllocAsync(size, s)
		require.NoError(t, err)
		require.NoError(t, p.FreeAsync(onStream, s)) // pending behind an event on s

		dev.FailFault(1)
		require.ErrorIs(t, dev.Memset(onStream, 1, size), device.ErrContextFailed)
		// once s has passed the free's event, its query reports the fault
		require.ErrorIs(t, s.Synchronize(), device.ErrContextFailed)
		ptr, err := p.Alloc(size)
		assert.ErrorIs(t, err, device.ErrContextFailed, "size %d: the allocation that finds the fault (got %v)", size, ptr)
		if err == nil {
			assert.NoError(t, p.Free(ptr))
		}
		_, err = p.Alloc(size)
		assert.ErrorIs(t, err, device.ErrContextFailed, "size %d: a later allocation", size)

		assert.Error(t, p.Release())
		assert.Error(t, s.Close())
		require.NoError(t, dev.Close())
		assert.Zero(t, dev.Ledger().Current(accounting.Device))
	}
}
