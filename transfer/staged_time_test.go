package transfer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// The ledger's time for a staged copy is the whole copy's wall time, taken
// once every chunk is done: more than nothing, and no more than the call
// that made it took. Its count is a copy per chunk, the last one short or,
// for a size that is a multiple of the chunk, whole.
func TestStagedRecordsItsWallTime(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev, transfer.WithRing(64<<10, 3, 2))
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	for _, size := range []struct {
		n      int
		chunks int64
	}{
		{1<<20 + 12345, 17}, // the last chunk short
		{1 << 20, 16},       // 16 whole chunks
	} {
		n := size.n
		src := testdev.RandomBytes(n)
		a, err := devarray.Empty(dev, devarray.Uint8, n)
		require.NoError(t, err)
		back := make([]byte, n)
		for _, tc := range []struct {
			name     string
			dir      accounting.Direction
			dst, src transfer.Endpoint
		}{
			{"HtoD", accounting.HtoD, transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8)},
			{"DtoH", accounting.DtoH, transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a)},
		} {
			t.Run(fmt.Sprintf("%s %d bytes", tc.name, n), func(t *testing.T) {
				before := dev.Ledger().Snapshot()
				start := time.Now()
				require.NoError(t, c.Copy(tc.dst, tc.src, transfer.Via(transfer.PathStaged)))
				call := time.Since(start)
				diff := accounting.Diff(before, dev.Ledger().Snapshot())
				got := diff.Copies[tc.dir][accounting.PathStaged]
				assert.Equal(t, int64(n), got.Bytes, "every chunk's bytes are counted")
				assert.Equal(t, size.chunks, got.Count, "one copy per chunk")
				assert.Equal(t, size.chunks, diff.Copies[accounting.HtoH][accounting.PathStaged].Count, "one host copy per chunk")
				assert.Positive(t, got.Seconds, "the staged path records its time")
				assert.LessOrEqual(t, got.Seconds, call.Seconds(), "the recorded time is the copy's wall time, not the sum of overlapping chunks")
			})
		}
		assert.Equal(t, src, back, "the data made the round trip")
		require.NoError(t, a.Free())
	}
}

// A synchronous copy that a kernel makes (the mapped path, a strided
// device side's pack) records the kernel's time, which has passed when
// the call returns: more than nothing, no more than the call took.
func TestKernelCopiesRecordTheirTime(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	const rows, cols = 64, 96
	mbuf, err := pinned.Alloc(dev, 4*rows*cols, pinned.Mapped)
	require.NoError(t, err)
	defer func() { assert.NoError(t, mbuf.Free()) }()
	copy(mbuf.Bytes(), testdev.RandomBytes(4*rows*cols))
	a, err := devarray.Empty(dev, devarray.Float32, rows, cols)
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Free()) }()
	wide, err := devarray.FromBytes(dev, testdev.RandomBytes(8*rows*cols), devarray.Float32, rows, 2*cols)
	require.NoError(t, err)
	defer func() { assert.NoError(t, wide.Free()) }()
	columns, err := wide.Slice(1, 0, 2*cols, 2) // every other column: a kernel packs it
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		dst, src transfer.Endpoint
		dir      accounting.Direction
		path     accounting.Path
	}{
		{"mapped HtoD", transfer.Dev(a), transfer.Pinned(mbuf, devarray.Float32, rows, cols), accounting.HtoD, accounting.PathMapped},
		{"mapped DtoH", transfer.Pinned(mbuf, devarray.Float32, rows, cols), transfer.Dev(a), accounting.DtoH, accounting.PathMapped},
		{"device to device, strided", transfer.Dev(a), transfer.Dev(columns), accounting.DtoD, accounting.PathKernel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []transfer.Option{}
			if tc.path == accounting.PathMapped {
				opts = append(opts, transfer.Via(transfer.PathMapped))
			}
			before := dev.Ledger().Snapshot()
			start := time.Now()
			require.NoError(t, c.Copy(tc.dst, tc.src, opts...))
			call := time.Since(start)
			got := accounting.Diff(before, dev.Ledger().Snapshot()).Copies[tc.dir][tc.path]
			assert.Equal(t, int64(4*rows*cols), got.Bytes)
			assert.Positive(t, got.Seconds, "the kernel's time is recorded")
			assert.LessOrEqual(t, got.Seconds, call.Seconds(), "no more than the call took")
		})
	}
}
