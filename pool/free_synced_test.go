package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// FreeSynced never touches the stream a block was allocated on: that
// stream may be gone (a foreign library destroyed it), and the driver's
// answer to an event recorded on a destroyed stream is undefined. The
// block is reusable at once on any stream when freed with no stream, and
// after the free's stream passes the free otherwise.
func TestFreeSyncedTouchesNotTheAllocationsStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		freeOn bool // free on a live second stream, else on none
	}{
		{"freed on no stream", false},
		{"freed on a live stream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := testdev.Open(t)
			p := pool.New(dev)
			defer func() { require.NoError(t, p.Release()) }()
			gone, err := dev.NewStream()
			require.NoError(t, err)
			live, err := dev.NewStream()
			require.NoError(t, err)
			defer func() { assert.NoError(t, live.Close()) }()
			n := int64(1 + rand.IntN(1<<20))
			ptr, err := p.AllocAsync(n, gone)
			require.NoError(t, err)
			require.NoError(t, p.CopyHtoD(ptr, testdev.RandomBytes(int(min(n, 4096)))))
			require.NoError(t, gone.Synchronize())
			require.NoError(t, gone.Close()) // the allocation's stream is destroyed first
			if tc.freeOn {
				require.NoError(t, p.FreeSynced(ptr, live), "a closed allocation stream is not touched")
				require.NoError(t, live.Synchronize())
			} else {
				require.NoError(t, p.FreeSynced(ptr, nil), "a closed allocation stream is not touched")
			}
			again, err := p.AllocAsync(n, live)
			require.NoError(t, err)
			assert.Equal(t, ptr, again, "the block is reusable on another stream")
			require.NoError(t, p.FreeAsync(again, live))
			require.NoError(t, live.Synchronize())
			assert.ErrorIs(t, p.FreeSynced(ptr, nil), pool.ErrNotAllocated, "a second free is refused")
			require.NoError(t, p.Release())
			assert.Zero(t, dev.Ledger().Current(accounting.Device), "nothing left")
		})
	}
}
