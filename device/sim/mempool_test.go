package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// "The allocator may also insert inter-stream dependencies to establish
// the temporal guarantee." (Stream Ordered Memory Allocator, overview): a
// block reused through allow-internal-dependencies is written by the
// allocating stream after the freeing stream's last write, and the stream
// race checker sees the inserted wait, as it sees a WaitEvent: no race.
// Without the policy the same program gets a block of its own.
func TestInternalDependencyOrdersForTheRaceChecker(t *testing.T) {
	dev := newDevice(t, sim.Config{Memory: 64 << 20, CheckStreams: true})
	var ss [2]driver.Stream
	for i := range ss {
		s, err := dev.NewStream()
		require.NoError(t, err)
		defer s.Close()
		ss[i] = s
	}
	pool, err := dev.NewMemPool()
	require.NoError(t, err)
	defer pool.Destroy()
	require.NoError(t, pool.SetReuse(driver.ReuseFollowEventDependencies, false))
	require.NoError(t, pool.SetReuse(driver.ReuseAllowOpportunistic, false))
	p, err := ss[0].MallocFromPoolAsync(4096, pool)
	require.NoError(t, err)
	require.NoError(t, ss[0].MemsetAsync(p, 7, 4096), "the freeing stream writes the block last")
	require.NoError(t, ss[0].FreeAsync(p))
	q, err := ss[1].MallocFromPoolAsync(4096, pool)
	require.NoError(t, err)
	assert.Equal(t, p, q, "reused through an inserted dependency")
	require.NoError(t, ss[1].MemsetAsync(q, 9, 4096), "no race: the allocating stream waits for the free")
	got := make([]byte, 4096)
	require.NoError(t, ss[1].CopyDtoHAsync(got, q))
	require.NoError(t, ss[1].Synchronize())
	assert.Equal(t, byte(9), got[4095])
	require.NoError(t, ss[1].FreeAsync(q))
}
