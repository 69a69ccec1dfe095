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
)

// Two Go buffers cut from one inside a page, while a copy uses the first
// one's registration: a second buffer that shares the page but no byte
// with it registers beside it (the driver registers bytes), by the
// planner's choice or asked for; one that shares bytes with it, without
// being inside it, cannot register while that copy runs, and takes the
// staged path instead, its bytes right and counted there, whether the
// planner chose the registered path or the copy asked for it. Once the
// first copy is done, the second registers.
func TestRegisteredBusyPagesFallBack(t *testing.T) {
	page := int(pageSize)
	for _, tc := range []struct {
		name     string
		secondAt int // where the second buffer starts, from the cut
		staged   bool
	}{
		{"sharing a page, no byte", 64, false},
		{"sharing bytes", -64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := testdev.Open(t)
			cheap := DefaultProfile(driver.Info{Model: "NVIDIA H100 80GB HBM3", Backend: "cuda"})
			require.NoError(t, cheap.SetRegistrationCost(Cost{Latency: 5e3, GBps: 500})) // registering pays for one copy
			c, err := New(dev, WithProfile(cheap))
			require.NoError(t, err)
			defer func() {
				require.NoError(t, c.Close())
				assert.Zero(t, dev.Ledger().Current(accounting.Registered), "every registration released")
			}()

			mem := testdev.RandomBytes(32<<20 + 3*page)
			cut := 16<<20 + page/2 // inside a page: the two halves share it
			first, second := mem[:cut], mem[cut+tc.secondAt:]
			start := dev.Ledger().Snapshot()
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

			for _, how := range []struct {
				name string
				opts []Option
			}{{"planner", nil}, {"asked for", []Option{Via(PathRegistered)}}} {
				require.NoError(t, d.CopyFrom(testdev.RandomBytes(len(second))), how.name) // not yet second's bytes
				before := dev.Ledger().Snapshot()
				require.NoError(t, c.Copy(Dev(d), ep, how.opts...), how.name)
				diff := accounting.Diff(before, dev.Ledger().Snapshot())
				back := make([]byte, len(second))
				require.NoError(t, d.CopyTo(back))
				assert.True(t, string(second) == string(back), "%s: the bytes arrived", how.name)
				staged := diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes
				pinnedDMA := diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes
				if tc.staged {
					assert.Zero(t, diff.Kinds[accounting.Registered].Allocs, "%s: no registration of busy bytes", how.name)
					assert.Equal(t, int64(len(second)), staged, "%s: counted on the staged path", how.name)
					assert.Zero(t, pinnedDMA, "%s: no DMA from registered memory", how.name)
					continue
				}
				assert.Zero(t, staged, how.name)
				assert.Equal(t, int64(len(second)), pinnedDMA, "%s: DMA from its own registration", how.name)
			}
			k := accounting.Diff(start, dev.Ledger().Snapshot()).Kinds[accounting.Registered]
			if !tc.staged {
				assert.Equal(t, int64(2), k.Allocs, "first's registration and second's, once for both copies")
				return
			}
			endBusy()
			before := dev.Ledger().Snapshot()
			require.NoError(t, c.Copy(Dev(d), ep, Via(PathRegistered)), "the first copy is done: its registration makes room")
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(1), diff.Kinds[accounting.Registered].Allocs)
			assert.Equal(t, int64(len(second)), diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes)
		})
	}
}
