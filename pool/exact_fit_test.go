package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// A request that fits a free block exactly takes all of it: no empty block
// is left behind, so Stats' free blocks are the holes there are, and the
// block's neighbours keep their bytes. The blocks are larger than the ones
// the pool parks, so each free goes to the free index at once.
func TestExactFitLeavesNoEmptyBlock(t *testing.T) {
	dev := testdev.Open(t)
	size := func() int64 { return int64(256 * (257 + rand.IntN(768))) } // 64 KiB to 256 KiB
	for _, tc := range []struct {
		name       string
		blocks     int // allocated in a row in one small segment
		hole       int // the one freed, then asked for again
		freeBefore int // free blocks once the hole is freed: the hole and the segment's tail
		freeAfter  int // once it is taken again: the tail
	}{
		{"a hole between two blocks", 3, 1, 2, 1},
		{"a hole at the segment's start", 3, 0, 2, 1},
		{"a hole among several", 6, 1 + rand.IntN(4), 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, dev)
			ptrs := make([]devarray.Ptr, tc.blocks)
			data := make([][]byte, tc.blocks)
			sizes := make([]int64, tc.blocks)
			for i := range ptrs {
				sizes[i] = size()
				var err error
				ptrs[i], err = p.Alloc(sizes[i])
				require.NoError(t, err)
				data[i] = testdev.RandomBytes(int(sizes[i]))
				require.NoError(t, p.CopyHtoD(ptrs[i], data[i]))
			}
			require.NoError(t, p.Free(ptrs[tc.hole]))
			require.Equal(t, tc.freeBefore, p.Stats().FreeBlocks)
			before := p.Stats()
			got, err := p.Alloc(sizes[tc.hole])
			require.NoError(t, err)
			assert.Equal(t, ptrs[tc.hole], got, "the hole is the best fit")
			st := p.Stats()
			assert.Equal(t, tc.freeAfter, st.FreeBlocks, "free blocks after an exact fit")
			assert.Equal(t, before.Cached-sizes[tc.hole], st.Cached)
			for i, ptr := range ptrs {
				if i == tc.hole {
					continue
				}
				got := make([]byte, sizes[i])
				require.NoError(t, p.CopyDtoH(got, ptr))
				assert.Equal(t, data[i], got, "block %d keeps its bytes", i)
				require.NoError(t, p.Free(ptr))
			}
			require.NoError(t, p.Free(got))
			assert.Equal(t, 1, p.Stats().FreeBlocks, "the segment is whole again")
		})
	}
}
