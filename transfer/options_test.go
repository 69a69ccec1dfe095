package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// WithRing's zero values keep the ring the Copier sizes itself, each on
// its own: the ring is the sized one with the non-zero values in their
// place, and a copy's WithRing(0, 0, 0) changes nothing: it reuses the
// copier's ring.
func TestWithRingZeroKeepsDefaults(t *testing.T) {
	dev := testdev.Open(t)
	profile := transfer.WithProfile(transfer.DefaultProfile(dev.Info()))
	sized, err := transfer.New(dev, profile)
	require.NoError(t, err)
	base := sized.Ring()
	require.NoError(t, sized.Close())
	for _, tc := range []struct {
		name            string
		chunkBytes      int64
		chunks, streams int
		want            transfer.RingShape
	}{
		{"all zero", 0, 0, 0, base},
		{"chunk size only", 64 << 10, 0, 0, transfer.RingShape{ChunkBytes: 64 << 10, Chunks: base.Chunks, Streams: base.Streams}},
		{"chunks only", 0, 3, 0, transfer.RingShape{ChunkBytes: base.ChunkBytes, Chunks: 3, Streams: min(base.Streams, 3)}},
		{"streams only", 0, 0, 1, transfer.RingShape{ChunkBytes: base.ChunkBytes, Chunks: base.Chunks, Streams: 1}},
		{"no chunk size", 0, 3, 2, transfer.RingShape{ChunkBytes: base.ChunkBytes, Chunks: 3, Streams: 2}},
		{"no chunks", 64 << 10, 0, 1, transfer.RingShape{ChunkBytes: 64 << 10, Chunks: base.Chunks, Streams: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := transfer.New(dev, profile, transfer.WithRing(tc.chunkBytes, tc.chunks, tc.streams))
			require.NoError(t, err)
			defer func() { require.NoError(t, c.Close()) }()
			assert.Equal(t, tc.want, c.Ring())
			const n = 256<<10 + 7
			a, err := devarray.Empty(dev, devarray.Uint8, n)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Free()) }()
			for i, opts := range [][]transfer.Option{nil, {transfer.WithRing(0, 0, 0)}} {
				src := testdev.RandomBytes(n)
				before := dev.Ledger().Snapshot()
				require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8), append(opts, transfer.Via(transfer.PathStaged))...))
				diff := accounting.Diff(before, dev.Ledger().Snapshot())
				assert.Equal(t, int64(n), diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes)
				if i == 0 {
					assert.Equal(t, tc.want.ChunkBytes*int64(tc.want.Chunks), diff.Kinds[accounting.Pinned].Current, "the first copy makes a ring of this shape")
					assert.Equal(t, int64(tc.want.Chunks), diff.Kinds[accounting.Pinned].Allocs, "a chunk at a time")
				} else {
					assert.Zero(t, diff.Kinds[accounting.Pinned].Allocs+diff.Kinds[accounting.Pinned].Frees, "a copy given WithRing(0, 0, 0) uses the same ring")
				}
				got, err := devarray.ToHost[uint8](a)
				require.NoError(t, err)
				assert.Equal(t, src, got)
			}
		})
	}
}

// WithOptions replaces the options wholesale, and its zero fields take
// the defaults: a staged copy given WithOptions(Options{}) runs through
// a ring of DefaultChunks chunks of DefaultChunkBytes.
func TestWithOptionsZeroTakesDefaults(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev, transfer.WithRing(64<<10, 3, 1))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	const n = 1<<20 + 5
	src := testdev.RandomBytes(n)
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	before := dev.Ledger().Snapshot()
	require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8), transfer.WithOptions(transfer.Options{Path: transfer.PathStaged})))
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(n), diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes)
	assert.Equal(t, int64(transfer.DefaultChunks), diff.Kinds[accounting.Pinned].Allocs, "a ring of the default chunks")
	assert.Equal(t, int64(transfer.DefaultChunks*transfer.DefaultChunkBytes), diff.Kinds[accounting.Pinned].Current, "of the default size")
	got, err := devarray.ToHost[uint8](a)
	require.NoError(t, err)
	assert.Equal(t, src, got)
}
