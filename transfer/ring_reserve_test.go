package transfer_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// TestReserveMakesTheRing: Reserve allocates the staging ring of the
// copier's shape (or of the shape asked for) at once, in the ledger's
// pinned memory; staged copies up and down afterwards allocate no more
// page-locked memory and move random bytes exactly; a second Reserve
// allocates nothing; Close frees the ring, and Reserve after it returns
// ErrClosed.
func TestReserveMakesTheRing(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []transfer.Option
	}{
		{"the copier's ring", nil},
		{"a ring asked for", []transfer.Option{transfer.WithRing(64<<10, 3, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := testdev.Open(t)
			led := dev.Ledger()
			c, err := transfer.New(dev, tc.opts...)
			require.NoError(t, err)
			closed := false
			defer func() {
				if !closed {
					assert.NoError(t, c.Close())
				}
			}()
			ring := c.Ring()
			allocs := led.Snapshot().Kinds[accounting.Pinned].Allocs
			require.NoError(t, c.Reserve())
			assert.Equal(t, ring.ChunkBytes*int64(ring.Chunks), led.Current(accounting.Pinned), "the ring's chunks, pinned")
			after := led.Snapshot().Kinds[accounting.Pinned].Allocs
			assert.Equal(t, int64(ring.Chunks), after-allocs, "one allocation a chunk")
			require.NoError(t, c.Reserve())
			assert.Equal(t, after, led.Snapshot().Kinds[accounting.Pinned].Allocs, "a second Reserve allocates nothing")

			n := int(2*ring.ChunkBytes) + 4*(1+int(testdev.RandomBytes(1)[0]))
			src := testdev.RandomBytes(n)
			a, err := devarray.Empty(dev, devarray.Uint8, n)
			require.NoError(t, err)
			defer func() { assert.NoError(t, a.Free()) }()
			require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8), transfer.Via(transfer.PathStaged)))
			got := make([]byte, n)
			require.NoError(t, c.Copy(transfer.HostBytes(got, devarray.Uint8), transfer.Dev(a), transfer.Via(transfer.PathStaged)))
			assert.Equal(t, src, got, fmt.Sprintf("%d bytes up and down through the reserved ring", n))
			assert.Equal(t, after, led.Snapshot().Kinds[accounting.Pinned].Allocs, "the staged copies allocate no page-locked memory")

			require.NoError(t, c.Close())
			closed = true
			assert.Zero(t, led.Current(accounting.Pinned), "Close frees the ring")
			assert.True(t, errors.Is(c.Reserve(), transfer.ErrClosed), "Reserve after Close")
		})
	}
}
