package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// Small blocks freed on the default stream are parked and handed back to
// the next request of their size; parked blocks never make the pool grow
// or keep a segment from going back, and the ledger's cached bytes count
// them all the while.
func TestParkedSmallBlocks(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the same size comes back from the parked stack", func(t *testing.T) {
			p := newPool(t, dev)
			size := int64(256 * (1 + rand.IntN(255)))
			a, err := p.Alloc(size)
			require.NoError(t, err)
			require.NoError(t, p.Free(a))
			b, err := p.Alloc(size)
			require.NoError(t, err)
			assert.Equal(t, a, b, "the block just freed, not a new split")
			st := p.Stats()
			assert.Equal(t, int64(1), st.FromDevice)
			assert.Equal(t, int64(1), st.FromCache)
			assert.Equal(t, st.Reserved-st.InUse, led.Snapshot().Kinds[accounting.Device].Cached, "ledger's cached bytes")
			require.NoError(t, p.Free(b))
		}},
		{"parked blocks merge before the pool grows", func(t *testing.T) {
			p := newPool(t, dev)
			// Fill one 2 MiB small segment with blocks of random small sizes, free them
			// all (parked), then ask for 1 MiB: it must come from the same segment.
			var ptrs []devarray.Ptr
			var used int64
			for used < 1<<20 {
				n := int64(256 * (1 + rand.IntN(64)))
				ptr, err := p.Alloc(n)
				require.NoError(t, err)
				ptrs = append(ptrs, ptr)
				used += accounting.AllocBytes(n)
			}
			require.Equal(t, int64(1), p.Stats().FromDevice)
			rand.Shuffle(len(ptrs), func(i, j int) { ptrs[i], ptrs[j] = ptrs[j], ptrs[i] })
			for _, ptr := range ptrs {
				require.NoError(t, p.Free(ptr))
			}
			big, err := p.Alloc(1 << 20)
			require.NoError(t, err)
			st := p.Stats()
			assert.Equal(t, int64(1), st.FromDevice, "parked blocks made the pool grow")
			assert.Equal(t, 1, st.Segments)
			require.NoError(t, p.Free(big))
			assert.Equal(t, 1, p.Stats().FreeBlocks, "the segment is whole again")
		}},
		{"trim gives back a segment of parked blocks", func(t *testing.T) {
			p := newPool(t, dev)
			before := led.Current(accounting.Device)
			var ptrs []devarray.Ptr
			for range 1 + rand.IntN(15) { // at most 15 × 64 KiB: one small segment
				ptr, err := p.Alloc(int64(1 + rand.IntN(parkMaxBytes)))
				require.NoError(t, err)
				ptrs = append(ptrs, ptr)
			}
			for _, ptr := range ptrs {
				require.NoError(t, p.Free(ptr))
			}
			freed, err := p.Trim()
			require.NoError(t, err)
			assert.Equal(t, int64(2<<20), freed)
			assert.Equal(t, before, led.Current(accounting.Device))
			assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Cached)
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}

// parkMaxBytes is the largest request the tests above treat as parked.
const parkMaxBytes = 64 << 10

// Every request the pool parks, from 0 bytes (one granule) to 64 KiB
// inclusive, gets back the block of its size freed last on the default
// stream, with no search of the free index: of two freed blocks, the later
// one, though the earlier is the lower address and the free index's best
// fit. A block one granule larger is not parked: it goes back to the free
// index at once, and the request gets the best fit.
func TestParkedSizesComeBackLastFreedFirst(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		name   string
		size   int64
		parked bool
	}{
		{"0 bytes", 0, true},
		{"one byte", 1, true},
		{"one granule", 256, true},
		{"a size between", int64(256 * (2 + rand.IntN(parkMaxBytes/256-2))), true},
		{"64 KiB, the largest parked", parkMaxBytes, true},
		{"a granule more than 64 KiB", parkMaxBytes + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, dev)
			var ptrs [3]devarray.Ptr // in a row in one small segment, the segment's free tail after them
			for i := range ptrs {
				var err error
				ptrs[i], err = p.Alloc(tc.size)
				require.NoError(t, err)
			}
			held := testdev.RandomBytes(int(accounting.AllocBytes(tc.size)))
			require.NoError(t, p.CopyHtoD(ptrs[1], held))
			require.NoError(t, p.Free(ptrs[0]))
			require.NoError(t, p.Free(ptrs[2]))
			got, err := p.Alloc(tc.size)
			require.NoError(t, err)
			want, why := ptrs[2], "the block freed last"
			if !tc.parked {
				want, why = ptrs[0], "the best fit: the hole the first block left"
			}
			assert.Equal(t, want, got, "%d bytes: %s", tc.size, why)
			back := make([]byte, len(held))
			require.NoError(t, p.CopyDtoH(back, ptrs[1]))
			assert.Equal(t, held, back, "the block between keeps its bytes")
			require.NoError(t, p.Free(got))
			require.NoError(t, p.Free(ptrs[1]))
			st := p.Stats()
			assert.Equal(t, int64(4), st.Allocs)
			assert.Equal(t, int64(4), st.Frees)
			assert.Equal(t, 1, st.FreeBlocks, "the segment is whole again")
		})
	}
}
