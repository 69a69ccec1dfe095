package transfer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// The ledger's time for a staged copy is the whole copy's wall time, taken
// once every chunk is done: more than nothing, and no more than the call
// that made it took.
func TestStagedRecordsItsWallTime(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev, transfer.WithRing(64<<10, 3, 2))
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	const n = 1<<20 + 12345 // 17 chunks, the last one short
	src := testdev.RandomBytes(n)
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Free()) }()
	back := make([]byte, n)
	for _, tc := range []struct {
		name     string
		dir      accounting.Direction
		dst, src transfer.Endpoint
	}{
		{"HtoD", accounting.HtoD, transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8)},
		{"DtoH", accounting.DtoH, transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dev.Ledger().Snapshot()
			start := time.Now()
			require.NoError(t, c.Copy(tc.dst, tc.src, transfer.Via(transfer.PathStaged)))
			call := time.Since(start)
			got := accounting.Diff(before, dev.Ledger().Snapshot()).Copies[tc.dir][accounting.PathStaged]
			assert.Equal(t, int64(n), got.Bytes, "every chunk's bytes are counted")
			assert.Equal(t, int64(17), got.Count, "one copy per chunk")
			assert.Positive(t, got.Seconds, "the staged path records its time")
			assert.LessOrEqual(t, got.Seconds, call.Seconds(), "the recorded time is the copy's wall time, not the sum of overlapping chunks")
		})
	}
	assert.Equal(t, src, back, "the data made the round trip")
}
