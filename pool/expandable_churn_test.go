package pool

import (
	"errors"
	"slices"
	"testing"

	rand "github.com/cuarray/cuarray/internal/testrand"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// An expandable pool under random allocations, frees (on the default
// stream and on a stream) and trims keeps its one segment whole: its
// blocks tile it in address order from the reservation's start, no two
// free ones side by side, its last block is the one at the end, its size
// is the bytes mapped and the ledger's physical bytes, and the free index
// holds exactly its free blocks.
func TestExpandableChurnKeepsItsSegmentWhole(t *testing.T) {
	r := rand.For(t)
	dev := testdev.Open(t)
	if _, err := dev.MemGranularity(); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no virtual memory here: %v", err)
	}
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	led := dev.Ledger()
	base := led.Current(accounting.Physical)
	p := New(dev, Expandable(256<<20))
	var held []devarray.Ptr
	for op := range 400 {
		switch k := r.IntN(10); {
		case k < 5 || len(held) == 0:
			n := 1 + r.Int64N(64<<10)
			if r.IntN(4) == 0 {
				n = 1 + r.Int64N(3<<20)
			}
			var ptr devarray.Ptr
			if r.IntN(3) == 0 {
				ptr, err = p.AllocAsync(n, s)
			} else {
				ptr, err = p.Alloc(n)
			}
			require.NoError(t, err, "op %d", op)
			held = append(held, ptr)
		case k < 9:
			i := r.IntN(len(held))
			if r.IntN(3) == 0 {
				require.NoError(t, p.FreeAsync(held[i], s), "op %d", op)
			} else {
				require.NoError(t, p.Free(held[i]), "op %d", op)
			}
			held = slices.Delete(held, i, i+1)
		default:
			_, err := p.Trim()
			require.NoError(t, err, "op %d", op)
		}
		p.checkExpandable(t, op)
		require.Equal(t, p.Stats().Reserved, led.Current(accounting.Physical)-base, "op %d", op)
	}
	for _, ptr := range held {
		require.NoError(t, p.Free(ptr))
	}
	require.NoError(t, p.Release())
	require.Equal(t, base, led.Current(accounting.Physical))
}

// checkExpandable checks the expandable segment's blocks (see
// TestExpandableChurnKeepsItsSegmentWhole).
func (p *Pool) checkExpandable(t *testing.T, op int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.exp
	seg := e.seg
	if seg == nil {
		require.Zero(t, e.mapped(), "op %d: chunks mapped without a segment", op)
		require.Empty(t, p.segments, "op %d", op)
		return
	}
	require.Equal(t, map[devarray.Ptr]*segment{e.base: seg}, p.segments, "op %d: one segment, at the reservation's start", op)
	require.Equal(t, e.mapped(), seg.size, "op %d: the segment is the chunks mapped", op)
	end, nfree := e.base, 0
	var prev *block
	for b := seg.first; b != nil; prev, b = b, b.next {
		require.Equal(t, end, b.ptr, "op %d: blocks tile the segment", op)
		require.Same(t, prev, b.prev, "op %d", op)
		require.Positive(t, b.size, "op %d", op)
		if b.state == free {
			nfree++
			require.False(t, prev != nil && prev.state == free, "op %d: two free blocks side by side", op)
		}
		end += devarray.Ptr(b.size)
	}
	require.Same(t, prev, seg.last, "op %d: last is the block at the end", op)
	require.Equal(t, e.base+devarray.Ptr(seg.size), end, "op %d", op)
	require.Equal(t, nfree, p.free[class(false)].n, "op %d: the free index holds the free blocks", op)
	require.Zero(t, p.free[class(true)].n, "op %d: no small segments", op)
}
