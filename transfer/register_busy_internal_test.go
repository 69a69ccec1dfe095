package transfer

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
)

// Two Go buffers that share a page, neither holding the other: while a
// copy uses the first one's registration, the driver cannot register the
// second. A copy of the second that the planner sent down the registered
// path takes the path the planner picks without it, its bytes right and
// counted there; one that asked for the registered path is refused
// (pinned.ErrBusy) and loses nothing; once the first copy is done, the
// second registers. Before, the planner's copy failed with ErrBusy too.
func TestRegisteredBusyPagesFallBack(t *testing.T) {
	dev := testdev.Open(t)
	cheap := DefaultProfile(driver.Info{Model: "NVIDIA H100 80GB HBM3", Backend: "cuda"})
	cheap.SetRegistrationCost(Cost{Latency: 5e3, GBps: 500}) // registering pays for one copy
	c, err := New(dev, WithProfile(cheap))
	require.NoError(t, err)
	defer func() {
		require.NoError(t, c.Close())
		assert.Zero(t, dev.Ledger().Current(accounting.Registered), "every registration released")
	}()

	page := int(pageSize)
	mem := testdev.RandomBytes(32<<20 + 3*page)
	cut := 16<<20 + page/2 // inside a page: the two halves share it
	first, second := mem[:cut], mem[cut+64:]
	busy := newRunning() // a copy that uses first's registration
	var ended sync.Once
	endBusy := func() { ended.Do(busy.end) }
	// Close waits for the registrations copies still use: a test that
	// fails before its busy copy ends must end it, or Close never returns.
	defer endBusy()
	_, _, _, _, err = c.acquire(first, busy)
	require.NoError(t, err)
	d, err := devarray.Empty(dev, devarray.Uint8, len(second))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free()) }()
	ep := HostBytes(second, devarray.Uint8)

	ch, err := c.Plan(Dev(d), ep)
	require.NoError(t, err)
	require.Equal(t, PathRegistered, ch.Path, "the planner's pick, so that the copy meets the busy pages: %s", ch.Reason)

	for _, tc := range []struct {
		name string
		opts []Option
		ok   bool
	}{
		{"planner", nil, true},
		{"asked for", []Option{Via(PathRegistered)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, d.CopyFrom(testdev.RandomBytes(len(second)))) // not yet second's bytes
			before := dev.Ledger().Snapshot()
			err := c.Copy(Dev(d), ep, tc.opts...)
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Zero(t, diff.Kinds[accounting.Registered].Allocs, "no registration of busy pages")
			assert.Zero(t, diff.Copies[accounting.HtoD][accounting.PathRegistered].Count)
			back := make([]byte, len(second))
			require.NoError(t, d.CopyTo(back))
			if !tc.ok {
				assert.ErrorIs(t, err, pinned.ErrBusy)
				assert.Zero(t, diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes+diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes+
					diff.Copies[accounting.HtoD][accounting.PathDirect].Bytes, "nothing moved")
				return
			}
			require.NoError(t, err)
			assert.True(t, string(second) == string(back), "the bytes arrived")
			moved := diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes + diff.Copies[accounting.HtoD][accounting.PathDirect].Bytes
			assert.Equal(t, int64(len(second)), moved, "counted on the path taken instead")
			assert.Zero(t, diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes, "no DMA from registered memory")
		})
	}

	endBusy()
	before := dev.Ledger().Snapshot()
	require.NoError(t, c.Copy(Dev(d), ep, Via(PathRegistered)), "the first copy is done: its registration makes room")
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(1), diff.Kinds[accounting.Registered].Allocs)
	assert.Equal(t, int64(len(second)), diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes)
}
