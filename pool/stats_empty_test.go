package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// With no free bytes cached (a new pool, every cached byte handed out, or
// the cache trimmed away) Stats report no free block and a fragmentation
// of 0, a number, as their doc says: a monitor that plots it or compares
// it with a threshold gets no NaN.
func TestStatsOfAnEmptyFreeCache(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		name string
		fill func(t *testing.T, p *pool.Pool) []devarray.Ptr // what stays allocated
	}{
		{"a new pool", func(*testing.T, *pool.Pool) []devarray.Ptr { return nil }},
		{"every byte of a segment in use", func(t *testing.T, p *pool.Pool) []devarray.Ptr {
			// four small blocks that fill one 2 MiB small segment
			a := int64(256 * (1 + rand.IntN(4095)))
			var ptrs []devarray.Ptr
			for _, n := range []int64{a, 1<<20 - a, a, 1<<20 - a} {
				ptr, err := p.Alloc(n)
				require.NoError(t, err)
				ptrs = append(ptrs, ptr)
			}
			return ptrs
		}},
		{"the cache trimmed", func(t *testing.T, p *pool.Pool) []devarray.Ptr {
			ptr, err := p.Alloc(int64(1 + rand.IntN(8<<20)))
			require.NoError(t, err)
			require.NoError(t, p.Free(ptr))
			_, err = p.Trim()
			require.NoError(t, err)
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, dev)
			held := tc.fill(t, p)
			st := p.Stats()
			assert.Zero(t, st.Cached)
			assert.Zero(t, st.FreeBlocks)
			assert.Zero(t, st.LargestFree)
			assert.Zero(t, st.Fragmentation, "no free bytes: nothing fragmented")
			for _, ptr := range held {
				require.NoError(t, p.Free(ptr))
			}
		})
	}
}
