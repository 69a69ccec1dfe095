package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// sharesBytes is Disjoint's brute-force reference: whether any byte of
// memory belongs to two elements of the layout.
func sharesBytes(shape []int, strides []int64, item int64) bool {
	if strides == nil {
		strides = contiguousStrides(shape, item)
	}
	owner := map[int64]bool{}
	for _, off := range elementOffsets(shape, strides) {
		for b := off; b < off+item; b++ {
			if owner[b] {
				return true
			}
			owner[b] = true
		}
	}
	return false
}

// randomLayout returns a small layout with random strides of any sign,
// zero and smaller than the element among them, so that some of its
// elements share memory and some do not.
func randomLayout(r *rand.Rand) (shape []int, strides []int64, item int64) {
	item = []int64{1, 2, 3, 4, 8}[r.IntN(5)]
	nd := 1 + r.IntN(4)
	shape = make([]int, nd)
	strides = make([]int64, nd)
	for i := range shape {
		shape[i] = r.IntN(6) // 0 sometimes: no elements
		if r.IntN(8) != 0 && shape[i] == 0 {
			shape[i] = 1 + r.IntN(5)
		}
		strides[i] = r.Int64N(8*item*4+1) - 4*item*4
		if r.IntN(3) == 0 {
			strides[i] *= item // whole elements apart, as views are
		}
	}
	return shape, strides, item
}

// Disjoint never calls a layout disjoint whose elements share a byte,
// and calls every view of a packed array (permuted, stepped, flipped)
// disjoint: random layouts against a brute-force count of the owners of
// each byte, and fixed ones whose answer is known.
func TestHostStridedDisjointMatchesByteOwnership(t *testing.T) {
	fixed := []struct {
		name     string
		shape    []int
		strides  []int64
		item     int64
		disjoint bool
	}{
		{"C-contiguous", []int{3, 4}, nil, 4, true},
		{"transposed", []int{4, 3}, []int64{4, 16}, 4, true},
		{"flipped and stepped", []int{3, 2}, []int64{-32, 8}, 4, true},
		{"zero stride, outer", []int{3, 4}, []int64{0, 4}, 4, false},
		{"zero stride, inner", []int{3, 4}, []int64{16, 0}, 4, false},
		{"stride below the item", []int{5}, []int64{2}, 4, false},
		{"rows closer than their width", []int{3, 4}, []int64{12, 4}, 4, false},
		{"axes with equal strides", []int{2, 2}, []int64{8, 8}, 4, false},
		{"zero stride on a length-1 axis", []int{1, 4}, []int64{0, 4}, 4, true},
		{"no elements", []int{0, 4}, []int64{0, 0}, 4, true},
		// Interleaved axes: disjoint, but not provably so by the sort.
		{"interleaved, not proven", []int{3, 2}, []int64{2, 3}, 1, false},
	}
	for _, c := range fixed {
		t.Run(c.name, func(t *testing.T) {
			mem, zero := memoryFor(c.shape, c.strides, c.item, 3)
			h, err := devarray.NewHostStrided(mem, zero, c.shape, c.strides, c.item)
			require.NoError(t, err)
			assert.Equal(t, c.disjoint, h.Disjoint(), "shape %v strides %v item %d", c.shape, c.strides, c.item)
			if c.disjoint {
				assert.False(t, sharesBytes(c.shape, c.strides, c.item), "a disjoint layout shares no byte")
			}
		})
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), 31))
	t.Run("random layouts", func(t *testing.T) {
		var proven, shared int
		for range 3000 {
			shape, strides, item := randomLayout(r)
			mem, zero := memoryFor(shape, strides, item, 0)
			h, err := devarray.NewHostStrided(mem, zero, shape, strides, item)
			require.NoError(t, err)
			overlap := sharesBytes(shape, strides, item)
			if h.Disjoint() {
				proven++
				require.False(t, overlap, "shape %v strides %v item %d: called disjoint, but elements share a byte", shape, strides, item)
			}
			if overlap {
				shared++
			}
		}
		// Both answers must have come up for the comparison to mean anything.
		assert.Greater(t, proven, 300, "layouts proven disjoint")
		assert.Greater(t, shared, 300, "layouts whose elements share bytes")
	})
	t.Run("views of packed arrays", func(t *testing.T) {
		for range 500 {
			mem, zero, shape, strides, item := randomView(r, 9, false)
			h, err := devarray.NewHostStrided(mem, zero, shape, strides, item)
			require.NoError(t, err)
			require.True(t, h.Disjoint(), "shape %v strides %v item %d is a view of a packed array", shape, strides, item)
		}
	})
}

// ScatterOn into a layout whose elements share memory writes each byte
// from the last element in C order, as Scatter does, however many
// workers it is offered: the layouts are large enough (8 MiB streams)
// that a disjoint one would be split over several goroutines.
func TestHostStridedScatterOnOverlappingLastWins(t *testing.T) {
	testdev.HostOnly(t)
	cases := []struct {
		name    string
		shape   []int
		strides []int64
		item    int64
	}{
		{"zero stride, outer", []int{2048, 1024}, []int64{0, 4}, 4},
		{"zero stride, inner", []int{2048, 1024}, []int64{4, 0}, 4},
		{"stride below the item", []int{1 << 21}, []int64{2}, 4},
		{"rows closer than their width", []int{1024, 1024}, []int64{1000, 8}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem, zero := memoryFor(c.shape, c.strides, c.item, 5)
			h, err := devarray.NewHostStrided(mem, zero, c.shape, c.strides, c.item)
			require.NoError(t, err)
			require.False(t, h.Disjoint())
			require.GreaterOrEqual(t, h.Len(), int64(4*devarray.ParallelMin), "large enough to be split")
			src := testdev.RandomBytes(int(h.Len()))
			want := append([]byte(nil), mem...)
			plainScatter(want, zero, c.shape, c.strides, c.item, src, 0)
			require.NoError(t, h.ScatterOn(src, 0, 4))
			requireSameMemory(t, want, mem, "scatter on 4 workers into shape %v strides %v", c.shape, c.strides)
		})
	}
}
