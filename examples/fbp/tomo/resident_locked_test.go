package tomo_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/pinned"
)

// A pipelined run whose sinograms or volume the caller holds page-locked
// already (pinned memory cannot be registered again) cannot page-lock
// them itself: it says why in Result.NotPageLocked and lets the copier's
// planner choose each copy, with the same bits as the run on pageable
// memory, and leaves nothing allocated or registered.
func TestPipelineTakesPageLockedHostArrays(t *testing.T) {
	g := tomo.Geometry{Size: 16, Angles: 12, Slices: 9}
	sino := randomSinograms(g)
	dev := openSim(t, "&latency=1ms", g, 2, tomo.DefaultStreams)
	want, err := tomo.ReconstructWith(dev, g, sino, tomo.Resident, tomo.Options{})
	require.NoError(t, err)
	require.Empty(t, want.NotPageLocked, "pageable arrays are page-locked for the run")

	for _, flags := range []pinned.Flags{0, pinned.Mapped} {
		buf, err := pinned.Alloc(dev, int64(4*len(sino)), flags)
		require.NoError(t, err)
		locked := pinned.Slice[float32](buf)
		copy(locked, sino)
		got, err := tomo.ReconstructWith(dev, g, locked, tomo.Resident, tomo.Options{})
		require.NoError(t, err, "sinograms in %v", buf)
		assert.Contains(t, got.NotPageLocked, "page-lock the sinograms", "it says why")
		assert.Equal(t, want.Volume, got.Volume, "the same bits")
		require.NoError(t, buf.Free())
	}
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "nothing left on the device")
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "nothing left page-locked")
	assert.Zero(t, dev.Ledger().Current(accounting.Registered), "nothing left registered")
}
