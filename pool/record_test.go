package pool_test

import (
	"bytes"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// A recording of a run through the pool holds the blocks the program asked
// for (their requested sizes, in order, paired with their frees) and marks
// the pool's segments, so that a replay sees the program's allocations.
func TestRecordingSeesBlocks(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	var log bytes.Buffer
	rec, err := dev.Ledger().Record(&log)
	require.NoError(t, err)

	type want struct {
		alloc bool
		bytes int64
	}
	var wants []want
	var live []devarray.Ptr
	var sizes []int64
	for range 200 {
		if len(live) > 0 && rand.IntN(3) == 0 {
			i := rand.IntN(len(live))
			require.NoError(t, p.Free(live[i]))
			wants = append(wants, want{false, sizes[i]})
			live, sizes = append(live[:i], live[i+1:]...), append(sizes[:i], sizes[i+1:]...)
			continue
		}
		n := int64(1 + rand.IntN(3<<20)) // small, medium and large blocks, parked ones among them
		if rand.IntN(2) == 0 {
			n = int64(1 + rand.IntN(64<<10))
		}
		ptr, err := p.Alloc(n)
		require.NoError(t, err)
		live, sizes = append(live, ptr), append(sizes, n)
		wants = append(wants, want{true, n})
	}
	for i, ptr := range live {
		require.NoError(t, p.Free(ptr))
		wants = append(wants, want{false, sizes[i]})
	}
	require.NoError(t, rec.Close())

	g, err := accounting.ReadLog(&log)
	require.NoError(t, err)
	var blocks []want
	segments := 0
	open := map[int]bool{}
	for _, e := range g.Events {
		switch {
		case e.Block && e.Op == accounting.OpAlloc:
			blocks = append(blocks, want{true, e.Bytes})
			open[e.ID] = true
		case e.Block && e.Op == accounting.OpFree:
			blocks = append(blocks, want{false, e.Bytes})
			assert.True(t, open[e.ID], "a block's free pairs with its allocation (id %d)", e.ID)
			delete(open, e.ID)
		case e.Segment && e.Op == accounting.OpAlloc:
			segments++
		}
	}
	assert.Equal(t, wants, blocks, "the blocks recorded are the program's requests, in order")
	assert.Empty(t, open)
	assert.Equal(t, int(p.Stats().FromDevice), segments, "every segment from the device is marked")
}
