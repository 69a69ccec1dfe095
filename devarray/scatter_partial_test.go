package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// memoryFor returns fresh random memory that holds every element of the
// layout with pad spare bytes on each side, and element 0's offset in it.
func memoryFor(shape []int, strides []int64, item, pad int64) (mem []byte, zero int64) {
	if strides == nil {
		strides = contiguousStrides(shape, item)
	}
	var lo, hi int64 = 0, item
	for ax, n := range shape {
		reach := int64(n-1) * strides[ax]
		if reach < 0 {
			lo += reach
		} else {
			hi += reach
		}
	}
	return testdev.RandomBytes(int(hi - lo + 2*pad)), pad - lo
}

// byteRanges returns the [lo, hi) ranges of an n-byte stream to try: all
// of them when there are few, else the whole stream and random ones, half
// of them starting and ending inside an element.
func byteRanges(r *rand.Rand, n, item int64) [][2]int64 {
	var out [][2]int64
	if n <= 160 {
		for lo := int64(0); lo <= n; lo++ {
			for hi := lo; hi <= n; hi++ {
				out = append(out, [2]int64{lo, hi})
			}
		}
		return out
	}
	out = append(out, [2]int64{0, n})
	for range 400 {
		lo := r.Int64N(n + 1)
		hi := lo + r.Int64N(n-lo+1)
		if item > 1 && r.IntN(2) == 0 {
			lo = min(n-1, lo-lo%item+1+r.Int64N(item-1))
			hi = max(lo, min(n, hi-hi%item+1+r.Int64N(item-1)))
		}
		out = append(out, [2]int64{lo, hi})
	}
	return out
}

// Scatter of a byte range that starts or ends inside an element writes
// every byte of memory as the plain loop does, byte by byte in C order:
// where elements lie on the same memory (a zero stride), the last byte in
// C order wins, the partial elements at the ends of the range included.
// Gather of the same ranges reads the reference's bytes. Layouts without
// broadcast axes are checked the same way. The staged copies cut a stream
// into chunks of a fixed byte size, so a range boundary inside an element
// is common; the chunked scatter of the whole stream is checked too.
func TestHostStridedScatterPartialElementsLastWins(t *testing.T) {
	testdev.HostOnly(t)
	r := rand.New(rand.NewPCG(rand.Uint64(), 7))
	tests := []struct {
		name    string
		shape   []int
		strides []int64 // nil: C-contiguous
		item    int64
	}{
		{"outer axis broadcast, 4-byte items", []int{3, 2}, []int64{0, 4}, 4},
		{"outer axis broadcast, 8-byte items", []int{4, 3}, []int64{0, 8}, 8},
		{"inner axis broadcast", []int{3, 4}, []int64{8, 0}, 8},
		{"every axis broadcast, 3-byte items", []int{5}, []int64{0}, 3},
		{"middle axis broadcast, 12-byte items", []int{2, 3, 2}, []int64{24, 0, 12}, 12},
		{"broadcast with a reversed axis, 2-byte items", []int{3, 5}, []int64{0, -2}, 2},
		{"broadcast with spread inner axis, 16-byte items", []int{2, 4}, []int64{0, 32}, 16},
		{"broadcast over a transposed matrix", []int{3, 4, 5}, []int64{0, 4, 16}, 4},
		{"broadcast, tiled loops", []int{20, 2, 130}, []int64{0, 130 * 16, 16}, 8},
		{"broadcast over a transposed matrix, tiled loops", []int{2, 80, 70}, []int64{0, 8, 80 * 8}, 8},
		{"contiguous", []int{6, 5}, nil, 4},
		{"transposed", []int{5, 6}, []int64{4, 20}, 4},
		{"reversed, 8-byte items", []int{7}, []int64{-8}, 8},
		{"stepped, 3-byte items", []int{4, 5}, []int64{30, 6}, 3},
		{"transposed, tiled loops", []int{90, 80}, []int64{8, 90 * 8}, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem, zero := memoryFor(tc.shape, tc.strides, tc.item, 5)
			strides := tc.strides
			if strides == nil {
				strides = contiguousStrides(tc.shape, tc.item)
			}
			h, err := devarray.NewHostStrided(mem, zero, tc.shape, tc.strides, tc.item)
			require.NoError(t, err)
			n := h.Len()
			stream := plainGather(mem, zero, tc.shape, strides, tc.item)
			require.Equal(t, int64(len(stream)), n)
			src := testdev.RandomBytes(int(n))
			got := make([]byte, len(mem))
			want := make([]byte, len(mem))
			for _, rg := range byteRanges(r, n, tc.item) {
				lo, hi := rg[0], rg[1]
				copy(want, mem)
				plainScatter(want, zero, tc.shape, strides, tc.item, src[lo:hi], lo)
				copy(got, mem)
				g, err := devarray.NewHostStrided(got, zero, tc.shape, tc.strides, tc.item)
				require.NoError(t, err)
				require.NoError(t, g.Scatter(src[lo:hi], lo))
				requireSameMemory(t, want, got, "scatter [%d, %d)", lo, hi)

				read := make([]byte, hi-lo)
				require.NoError(t, h.Gather(read, lo))
				require.Equal(t, stream[lo:hi], read, "gather [%d, %d)", lo, hi)
			}

			// The whole stream in chunks of a fixed byte size, one after
			// another, as the staged copies move it.
			copy(want, mem)
			plainScatter(want, zero, tc.shape, strides, tc.item, src, 0)
			for _, chunk := range []int64{1, tc.item + 1, 2*tc.item - 1, 7, 64 + 3} {
				copy(got, mem)
				g, err := devarray.NewHostStrided(got, zero, tc.shape, tc.strides, tc.item)
				require.NoError(t, err)
				for lo := int64(0); lo < n; lo += chunk {
					hi := min(n, lo+chunk)
					require.NoError(t, g.Scatter(src[lo:hi], lo))
				}
				requireSameMemory(t, want, got, "scatter of the stream in %d-byte chunks", chunk)
			}
		})
	}
}

// requireSameMemory fails at the first byte where got differs from want,
// naming it (require.Equal of whole buffers hides which byte).
func requireSameMemory(t *testing.T, want, got []byte, format string, args ...any) {
	t.Helper()
	for b := range want {
		if got[b] != want[b] {
			require.Failf(t, "memory differs from the byte-by-byte C-order reference",
				"byte %d of memory: got %d, want %d; "+format, append([]any{b, got[b], want[b]}, args...)...)
		}
	}
}
