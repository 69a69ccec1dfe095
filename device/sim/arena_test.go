package sim

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArenaBestFitSplitCoalesce(t *testing.T) {
	a := newArena(4096)
	x, ok := a.alloc(1024)
	require.True(t, ok)
	y, ok := a.alloc(512)
	require.True(t, ok)
	z, ok := a.alloc(1024)
	require.True(t, ok)
	assert.Equal(t, []int64{0, 1024, 1536}, []int64{x, y, z})
	assert.Equal(t, int64(2560), a.used)

	size, ok := a.release(y)
	require.True(t, ok)
	assert.Equal(t, int64(512), size)
	// Free now: [1024,1536) of 512 and [2560,4096) of 1536. Best fit for 256 is the 512 hole.
	w, ok := a.alloc(256)
	require.True(t, ok)
	assert.Equal(t, int64(1024), w, "best fit picks the smallest hole that fits")
	_, ok = a.alloc(2048)
	assert.False(t, ok, "no single hole of 2048")
	assert.Equal(t, int64(1536), a.largestFree())

	for _, off := range []int64{x, w, z} {
		_, ok := a.release(off)
		require.True(t, ok)
	}
	assert.Equal(t, []span{{0, 4096}}, a.freeSpans(), "everything coalesces back into one range")
	_, ok = a.release(x)
	assert.False(t, ok, "double release")
}

func TestArenaFind(t *testing.T) {
	a := newArena(4096)
	x, _ := a.alloc(512)
	y, _ := a.alloc(256)
	tests := []struct {
		off, n int64
		ok     bool
	}{
		{x, 512, true}, {x + 100, 412, true}, {x + 100, 413, false}, {y, 256, true},
		{y + 256, 1, false}, {x, 768, false}, {x, -1, false}, {2048, 1, false},
	}
	for _, tt := range tests {
		_, ok := a.find(tt.off, tt.n)
		assert.Equal(t, tt.ok, ok, "find(%d, %d)", tt.off, tt.n)
	}
}

// TestArenaRandom allocates and frees at random and checks, after every
// step, that live ranges never overlap and free plus used is the whole.
func TestArenaRandom(t *testing.T) {
	const size = 1 << 20
	a := newArena(size)
	live := map[int64]int64{}
	for step := range 5000 {
		if len(live) > 0 && rand.IntN(3) == 0 {
			for off := range live {
				got, ok := a.release(off)
				require.True(t, ok)
				require.Equal(t, live[off], got)
				delete(live, off)
				break
			}
		} else {
			n := int64(1+rand.IntN(64)) * Alignment
			if off, ok := a.alloc(n); ok {
				live[off] = n
			}
		}
		var used, free int64
		prevEnd := int64(-1)
		for _, s := range a.live {
			require.Greater(t, s.off, prevEnd-1, "step %d: live ranges overlap", step)
			prevEnd = s.end()
			used += s.size
		}
		fs := a.freeSpans()
		for i, f := range fs {
			free += f.size
			if i > 0 {
				require.Greater(t, f.off, fs[i-1].end(), "step %d: free ranges are not coalesced", step)
			}
		}
		require.Equal(t, int64(size), used+free, "step %d", step)
		require.Equal(t, used, a.used)
	}
}
