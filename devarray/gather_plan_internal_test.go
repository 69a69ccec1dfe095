package devarray

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/require"
)

// gatherPlanCases are layouts of 4-byte elements with the axis their
// host strided copy tiles with the innermost one (HostStrided's rule: the
// axis closest in memory, if it is closer than the innermost one, and,
// when that is the next axis out, only for rows longer than tileMaxRow),
// and the unit in bytes a parallel piece is a multiple of: whole tile
// units, whole rows, or 64 elements where nothing is tiled.
var gatherPlanCases = []struct {
	name    string
	shape   []int
	strides []int64
	tile    int
	unit    int64
}{
	{"C-contiguous", []int{64, 300}, nil, -1, 256},
	{"padded rows", []int{64, 300}, []int64{1216, 4}, -1, 256},
	{"every other element of each row", []int{100, 100}, []int64{800, 8}, -1, 256},
	{"a strided vector", []int{5000}, []int64{8}, -1, 256},
	{"a transposed matrix", []int{64, 300}, []int64{4, 256}, 0, 300 * 4},
	{"a transposed matrix, reversed", []int{64, 300}, []int64{-4, 256}, 0, 300 * 4},
	{"a transposed matrix, rows of tileMaxRow", []int{300, tileMaxRow}, []int64{4, 1200}, -1, 256},
	{"a transposed matrix, rows one longer", []int{300, tileMaxRow + 1}, []int64{4, 1200}, 0, (tileMaxRow + 1) * 4},
	{"a transposed matrix, short rows", []int{300, 48}, []int64{4, 1200}, -1, 256},
	{"rows sharing their elements", []int{3, 100}, []int64{400, 400}, -1, 256},
	{"a volume with its axes reversed", []int{70, 6, 10}, []int64{4, 280, 1680}, 0, 70 * 6 * 10 * 4},
	{"a volume, the middle axis closest", []int{6, 70, 100}, []int64{28000, 4, 280}, 1, 100 * 4},
	{"a volume, the middle axis closest, short rows", []int{6, 70, 10}, []int64{2800, 4, 280}, -1, 256},
	{"a 4-D array tiled with its second axis", []int{2, 50, 3, 40}, []int64{24000, 4, 200, 600}, 1, 50 * 3 * 40 * 4},
	// A unit of 3 MiB, more than a share of ParallelMin.
	{"a volume with its axes reversed, 3 MiB", []int{128, 64, 96}, []int64{4, 512, 32768}, 0, 128 * 64 * 96 * 4},
}

// A host strided copy tiles the axis its rule names, and splits a
// parallel copy on whole units of it.
func TestGatherTileChoice(t *testing.T) {
	for _, tc := range gatherPlanCases {
		t.Run(tc.name, func(t *testing.T) {
			h := newPlanCase(t, tc.shape, tc.strides)
			require.Equal(t, tc.tile, h.tile, "the axis tiled of %v", h.shape)
			require.Equal(t, tc.unit, h.pieceAlign(), "the unit of a piece")
		})
	}
}

// A parallel copy gives each of its goroutines an equal share of the
// range, at least ParallelMin bytes, its ends moved to whole units:
// exactly workers pieces where a unit is no longer than a share (and
// never more), one where fewer than two shares of ParallelMin fit or a
// unit is more than half the range, every piece within a unit of a share
// (and the remainder of n/workers).
func TestGatherPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for _, tc := range gatherPlanCases {
		// Repeat the layout's elements as an outer axis until the stream
		// holds 3 to 8 shares of ParallelMin.
		elems := int64(1)
		for _, n := range tc.shape {
			elems *= int64(n)
		}
		outer := int(ParallelMin*(3+rng.Int64N(6))/(elems*4)) + 1
		shape := append([]int{outer}, tc.shape...)
		var strides []int64
		if tc.strides != nil {
			span := int64(0)
			for i, n := range tc.shape {
				span += int64(n-1) * int64(abs64(tc.strides[i]))
			}
			strides = append([]int64{span + 4}, tc.strides...)
		}
		h := newPlanCase(t, shape, strides)
		align := h.pieceAlign()
		for _, workers := range []int{-1, 0, 1, 2, 3, 4, 7, 16} {
			// Ranges: the whole stream, one from a random element in the
			// first quarter to one in the last, one shorter than two shares,
			// and two units, less an element and not, from the start and from
			// the middle of a unit.
			e, cut := 4*rng.Int64N(h.n/16), 4*rng.Int64N(h.n/16)
			ranges := [][2]int64{{0, h.n}, {e, h.n - e - cut}, {e, 2*ParallelMin - 4}}
			if mid := align / 8 * 4; mid+2*align <= h.n {
				ranges = append(ranges, [2]int64{0, 2 * align}, [2]int64{0, 2*align - 4}, [2]int64{mid, 2*align - 4})
			}
			for _, r := range ranges {
				lo, n := r[0], r[1]
				t.Run(fmt.Sprintf("%s/%d workers/[%d,+%d)", tc.name, workers, lo, n), func(t *testing.T) {
					ends := h.pieces(nil, lo, n, workers)
					want := int(min(int64(max(workers, 1)), n/ParallelMin))
					require.NotEmpty(t, ends)
					require.Equal(t, n, ends[len(ends)-1], "the last piece ends the range")
					if want < 2 || align > n/2 {
						require.Len(t, ends, 1, "one piece")
						return
					}
					share := n / int64(want)
					require.GreaterOrEqual(t, share, int64(ParallelMin))
					require.LessOrEqual(t, len(ends), want, "at most a piece per worker")
					if align <= share {
						require.Len(t, ends, want, "a piece per worker")
					}
					from := int64(0)
					for i, to := range ends {
						require.Greater(t, to, from, "piece %d of %v is empty", i, ends)
						if i < len(ends)-1 {
							require.Zero(t, (lo+to)%align, "piece %d of %v ends inside a unit of %d bytes", i, ends, align)
						}
						if align <= share {
							require.Less(t, abs64(to-from-share), uint64(align+int64(want)), "piece %d of %v: a share is %d bytes", i, ends, share)
						}
						from = to
					}
				})
			}
		}
	}
}

// newPlanCase returns the host strided copy of a layout of 4-byte
// elements over memory just large enough.
func newPlanCase(t *testing.T, shape []int, strides []int64) *HostStrided {
	t.Helper()
	lay, err := newLayout(shape, strides, 4)
	require.NoError(t, err)
	h, err := NewHostStrided(make([]byte, lay.hi-lay.lo), -lay.lo, shape, strides, 4)
	require.NoError(t, err)
	return h
}

// A host strided copy on one goroutine (Gather, Scatter) allocates
// nothing, whatever its layout: staged copies call it once per chunk.
func TestGatherOnOneGoroutineAllocatesNothing(t *testing.T) {
	for _, tc := range gatherPlanCases {
		t.Run(tc.name, func(t *testing.T) {
			h := newPlanCase(t, tc.shape, tc.strides)
			packed := make([]byte, h.n/2)
			lo := h.n / 4 / 4 * 4
			require.Zero(t, testing.AllocsPerRun(20, func() { require.NoError(t, h.Gather(packed, lo)) }), "Gather allocates")
			require.Zero(t, testing.AllocsPerRun(20, func() { require.NoError(t, h.Scatter(packed, lo)) }), "Scatter allocates")
		})
	}
}
