package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// A stream that has freed blocks it has not passed yet reuses the one that
// fits its request best, as it does among free blocks: the smallest that
// holds the request, whatever the order of the frees, so the larger ones
// stay for larger requests.
func TestStreamReusesItsBestFittingPendingBlock(t *testing.T) {
	dev := testdev.Open(t)
	granules := func(lo, hi int) int64 { return int64(256 * (lo + rand.IntN(hi-lo))) }
	for _, tc := range []struct {
		name  string
		sizes []int64 // freed on the stream in this order, all pending
		ask   int64
		want  int // the index in sizes of the block the request gets
	}{
		{"the first freed fits best", []int64{granules(300, 400), granules(500, 600)}, granules(260, 300), 0},
		{"the last freed fits best", []int64{granules(500, 600), granules(300, 400)}, granules(260, 300), 1},
		{"the middle one fits best", []int64{granules(700, 800), granules(300, 400), granules(500, 600)}, granules(260, 300), 1},
		{"only the larger holds it", []int64{granules(300, 400), granules(500, 600)}, granules(420, 480), 1},
		{"the one after a smaller that does not hold it", []int64{granules(100, 200), granules(500, 600), granules(300, 400)}, granules(250, 290), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, dev)
			s, err := dev.NewStream()
			require.NoError(t, err)
			defer func() { assert.NoError(t, s.Close()) }()
			ptrs := make([]devarray.Ptr, len(tc.sizes))
			for i, n := range tc.sizes {
				ptrs[i], err = p.AllocAsync(n, s)
				require.NoError(t, err)
				require.NoError(t, p.CopyHtoD(ptrs[i], testdev.RandomBytes(int(n))))
			}
			resume := testdev.Hold(t, s) // s cannot pass the frees
			for _, ptr := range ptrs {
				require.NoError(t, p.FreeAsync(ptr, s))
			}
			require.Equal(t, len(ptrs), p.Stats().PendingBlocks)
			got, err := p.AllocAsync(tc.ask, s)
			require.NoError(t, err)
			assert.Equal(t, ptrs[tc.want], got, "%d bytes from blocks of %v freed in that order", tc.ask, tc.sizes)
			require.NoError(t, p.FreeAsync(got, s))
			resume()
			require.NoError(t, s.Synchronize())
		})
	}
}
