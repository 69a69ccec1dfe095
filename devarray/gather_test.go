package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
)

// plainGather is the reference: every element's bytes, one at a time, in
// C order, by its byte offset.
func plainGather(mem []byte, zero int64, shape []int, strides []int64, item int64) []byte {
	var out []byte
	for _, off := range elementOffsets(shape, strides) {
		out = append(out, mem[zero+off:zero+off+item]...)
	}
	return out
}

// randomView returns a random strided view of a random parent layout:
// permuted, stepped, flipped, some axes broadcast (stride 0) when
// broadcast is set, with element 0 placed so every element is in mem.
func randomView(r *rand.Rand, maxDim int, broadcast bool) (mem []byte, zero int64, shape []int, strides []int64, item int64) {
	item = []int64{1, 2, 4, 8, 16, 3, 12}[r.IntN(7)]
	nd := r.IntN(5)
	shape = make([]int, nd)
	parent := make([]int, nd)
	total := 1
	for i := range shape {
		shape[i] = 1 + r.IntN(maxDim)
		for total*shape[i] > 1<<14 && shape[i] > 1 {
			shape[i] /= 2 // keep the reference loop quick
		}
		total *= shape[i]
		parent[i] = shape[i] * (1 + r.IntN(2))
	}
	ps := contiguousStrides(parent, item)
	perm := r.Perm(nd)
	strides = make([]int64, nd)
	sh := make([]int, nd)
	for i, p := range perm {
		sh[i] = shape[p]
		strides[i] = ps[p] * int64(1+r.IntN(2))
		if parent[p] < sh[i]*int(strides[i]/ps[p]) {
			strides[i] = ps[p]
		}
		if r.IntN(4) == 0 {
			strides[i] = -strides[i]
		}
		if broadcast && r.IntN(6) == 0 {
			strides[i] = 0
		}
	}
	var lo, hi int64 = 0, item
	for i := range sh {
		reach := int64(sh[i]-1) * strides[i]
		if reach < 0 {
			lo += reach
		} else {
			hi += reach
		}
	}
	pad := int64(r.IntN(8))
	mem = make([]byte, hi-lo+2*pad)
	for i := range mem {
		mem[i] = byte(r.Uint32())
	}
	return mem, pad - lo, sh, strides, item
}

// Property: Gather of any byte range of the packed stream is that range of
// the plain reference, and Scatter of it writes exactly those bytes.
func TestHostStridedMatchesPlainLoop(t *testing.T) {
	testdev.HostOnly(t)
	r := rand.New(rand.NewPCG(rand.Uint64(), 1))
	for range 1500 {
		mem, zero, shape, strides, item := randomView(r, 40, false)
		h, err := devarray.NewHostStrided(mem, zero, shape, strides, item)
		require.NoError(t, err, "shape %v strides %v item %d", shape, strides, item)
		want := plainGather(mem, zero, shape, strides, item)
		require.Equal(t, int64(len(want)), h.Len())
		lo := int64(0)
		if len(want) > 0 {
			lo = r.Int64N(int64(len(want)))
		}
		hi := lo + r.Int64N(int64(len(want))-lo+1)
		if r.IntN(3) == 0 {
			lo, hi = 0, int64(len(want))
		}
		got := make([]byte, hi-lo)
		require.NoError(t, h.Gather(got, lo))
		require.Equal(t, want[lo:hi], got, "gather [%d, %d) of shape %v strides %v item %d", lo, hi, shape, strides, item)

		// Scatter fresh bytes into the same range; the reference then reads them back.
		fresh := make([]byte, hi-lo)
		for i := range fresh {
			fresh[i] = byte(r.Uint32())
		}
		before := append([]byte(nil), mem...)
		require.NoError(t, h.Scatter(fresh, lo))
		after := plainGather(mem, zero, shape, strides, item)
		require.Equal(t, fresh, after[lo:hi], "scatter [%d, %d) of shape %v strides %v item %d", lo, hi, shape, strides, item)
		require.Equal(t, want[:lo], after[:lo], "bytes before the range kept")
		require.Equal(t, want[hi:], after[hi:], "bytes after the range kept")
		// Bytes of mem that are no element's are untouched.
		touched := make([]bool, len(mem))
		for _, off := range elementOffsets(shape, strides) {
			for b := range item {
				touched[zero+off+b] = true
			}
		}
		for i := range mem {
			if !touched[i] && before[i] != mem[i] {
				require.Failf(t, "scatter wrote outside the elements", "byte %d changed", i)
			}
		}
	}
}

// Big transposes and permutations take the tiled loops over several tiles.
func TestHostStridedTiled(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 2))
	cases := []struct {
		name    string
		shape   []int
		perm    []int
		item    int64
		lo, len int64 // a range of the stream; len -1: to the end
	}{
		{"transposed float32", []int{97, 131}, []int{1, 0}, 4, 0, -1},
		{"transposed float64, partial rows", []int{70, 90}, []int{1, 0}, 8, 1234, 20000},
		{"3-D (2,0,1)", []int{20, 18, 33}, []int{2, 0, 1}, 4, 0, -1},
		{"3-D (1,2,0)", []int{20, 18, 33}, []int{1, 2, 0}, 8, 0, -1},
		{"3-D (2,1,0), a chunk", []int{20, 18, 33}, []int{2, 1, 0}, 4, 4000, 9001},
		{"4-D (3,1,0,2)", []int{5, 6, 7, 40}, []int{3, 1, 0, 2}, 2, 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := contiguousStrides(c.shape, c.item)
			n := c.item
			for _, d := range c.shape {
				n *= int64(d)
			}
			mem := make([]byte, n)
			for i := range mem {
				mem[i] = byte(r.Uint32())
			}
			shape := make([]int, len(c.perm))
			strides := make([]int64, len(c.perm))
			for i, p := range c.perm {
				shape[i], strides[i] = c.shape[p], ps[p]
			}
			h, err := devarray.NewHostStrided(mem, 0, shape, strides, c.item)
			require.NoError(t, err)
			want := plainGather(mem, 0, shape, strides, c.item)
			hi := c.lo + c.len
			if c.len < 0 {
				hi = int64(len(want))
			}
			got := make([]byte, hi-c.lo)
			require.NoError(t, h.Gather(got, c.lo))
			require.Equal(t, want[c.lo:hi], got)
			fresh := make([]byte, len(got))
			for i := range fresh {
				fresh[i] = byte(r.Uint32())
			}
			require.NoError(t, h.Scatter(fresh, c.lo))
			require.Equal(t, fresh, plainGather(mem, 0, shape, strides, c.item)[c.lo:hi])
		})
	}
}

func TestHostStridedErrors(t *testing.T) {
	mem := make([]byte, 64)
	_, err := devarray.NewHostStrided(mem, 0, []int{4, 4}, []int64{16, 4}, 4)
	require.NoError(t, err)
	_, err = devarray.NewHostStrided(mem, 4, []int{4, 4}, []int64{16, 4}, 4)
	require.ErrorIs(t, err, devarray.ErrBounds, "one element past the memory")
	require.Contains(t, err.Error(), "bytes [4, 68) of 64 bytes", "the error names the bytes the elements need")
	_, err = devarray.NewHostStrided(mem, 8, []int{4, 4}, []int64{-16, 4}, 4)
	require.ErrorIs(t, err, devarray.ErrBounds, "negative stride below the memory")
	require.Contains(t, err.Error(), "bytes [-40, 24) of 64 bytes", "the error names the bytes the elements need")
	_, err = devarray.NewHostStrided(mem, 0, []int{4}, []int64{4, 4}, 4)
	require.ErrorIs(t, err, devarray.ErrShape)
	_, err = devarray.NewHostStrided(mem, 0, []int{4}, nil, 0)
	require.ErrorIs(t, err, devarray.ErrShape)
	h, err := devarray.NewHostStrided(mem, 0, []int{4, 4}, []int64{4, 16}, 4)
	require.NoError(t, err)
	err = h.Gather(make([]byte, 8), 60)
	require.ErrorIs(t, err, devarray.ErrBounds, "past the stream's end")
	require.Contains(t, err.Error(), "bytes [60, 68) of a 64-byte stream", "the error names the range asked for")
	require.ErrorIs(t, h.Scatter(make([]byte, 8), -1), devarray.ErrBounds, "before its start")
	require.NoError(t, h.Gather(nil, 64), "an empty range at the end")
}

// plainScatter is Scatter's reference: bytes [lo, lo+len(src)) of the
// packed stream written one at a time in C order, so where elements
// overlap the last in C order wins.
func plainScatter(mem []byte, zero int64, shape []int, strides []int64, item int64, src []byte, lo int64) {
	offs := elementOffsets(shape, strides)
	for i, b := range src {
		at := lo + int64(i)
		mem[zero+offs[at/item]+at%item] = b
	}
}

// Scatter into a layout with broadcast axes (stride 0) writes each byte
// of memory from the last element in C order that lies on it, on every
// path: random views, and large ones whose broadcast axis is the one the
// tiled loops would pair with a spread-out innermost axis.
func TestHostStridedScatterBroadcastLastWins(t *testing.T) {
	testdev.HostOnly(t)
	r := rand.New(rand.NewPCG(rand.Uint64(), 4))
	type layout struct {
		shape   []int
		strides []int64
		item    int64
	}
	fixed := []layout{
		{[]int{8, 100}, []int64{0, 8}, 4},
		{[]int{3, 5, 90}, []int64{0, 0, 16}, 8},
		{[]int{4, 3, 80}, []int64{0, 2 * 80 * 4, 4 * 2}, 4},
		{[]int{6, 70, 3}, []int64{0, 3 * 2, 2}, 2},
		{[]int{20, 2, 130}, []int64{0, 130 * 16, 16}, 8},
	}
	for i := range 300 {
		var mem []byte
		var zero int64
		var l layout
		if i < len(fixed) {
			l = fixed[i]
			var hi int64 = l.item
			for ax, n := range l.shape {
				hi += int64(n-1) * l.strides[ax]
			}
			mem = make([]byte, hi)
		} else {
			mem, zero, l.shape, l.strides, l.item = randomView(r, 70, true)
		}
		h, err := devarray.NewHostStrided(mem, zero, l.shape, l.strides, l.item)
		require.NoError(t, err)
		n := h.Len()
		lo, hi := int64(0), n
		if n > 0 && r.IntN(2) == 0 {
			lo = r.Int64N(n/l.item) * l.item
			hi = lo + r.Int64N((n-lo)/l.item+1)*l.item
		}
		src := make([]byte, hi-lo)
		for j := range src {
			src[j] = byte(r.Uint32())
		}
		want := append([]byte(nil), mem...)
		plainScatter(want, zero, l.shape, l.strides, l.item, src, lo)
		require.NoError(t, h.Scatter(src, lo))
		for b := range mem {
			if mem[b] != want[b] {
				require.Failf(t, "scatter: not the last element's byte", "byte %d of memory: got %#x, want %#x; scatter [%d, %d) into shape %v strides %v item %d",
					b, mem[b], want[b], lo, hi, l.shape, l.strides, l.item)
			}
		}
	}
}

// Contiguous reports whether the elements are one packed run in C order
// (length-1 axes and their strides do not matter), as the copies that
// take the one-copy path rely on.
func TestHostStridedContiguous(t *testing.T) {
	rows, cols := 2+rand.IntN(20), 2+rand.IntN(20)
	item := []int64{1, 2, 4, 8, 16}[rand.IntN(5)]
	row := int64(cols) * item
	tests := []struct {
		name    string
		shape   []int
		strides []int64
		want    bool
	}{
		{"nil strides", []int{rows, cols}, nil, true},
		{"C strides", []int{rows, cols}, []int64{row, item}, true},
		{"a length-1 axis with any stride", []int{rows, 1, cols}, []int64{row, 7 * row, item}, true},
		{"one element", []int{1, 1}, []int64{5, 3}, true},
		{"transposed", []int{cols, rows}, []int64{item, row}, false},
		{"padded rows", []int{rows, cols}, []int64{row + item, item}, false},
		{"every other element", []int{rows * cols / 2}, []int64{2 * item}, false},
		{"reversed", []int{rows * cols}, []int64{-item}, false},
		{"broadcast rows", []int{rows, cols}, []int64{0, item}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := make([]byte, 2*int64(rows*cols)*item+7*row)
			zero := int64(0)
			if tt.strides != nil && tt.strides[0] < 0 {
				zero = int64(rows*cols-1) * item
			}
			h, err := devarray.NewHostStrided(mem, zero, tt.shape, tt.strides, item)
			require.NoError(t, err)
			require.Equal(t, tt.want, h.Contiguous())
		})
	}
}

// FuzzHostStrided checks the specialised loops against the plain
// reference loop on fuzzed layouts, broadcast axes included.
func FuzzHostStrided(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(7), uint64(99))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		mem, zero, shape, strides, item := randomView(r, 70, true)
		h, err := devarray.NewHostStrided(mem, zero, shape, strides, item)
		require.NoError(t, err)
		want := plainGather(mem, zero, shape, strides, item)
		lo := int64(0)
		if len(want) > 0 {
			lo = r.Int64N(int64(len(want)))
		}
		got := make([]byte, int64(len(want))-lo)
		require.NoError(t, h.Gather(got, lo))
		require.Equal(t, want[lo:], got)
	})
}

// Gather and Scatter on several goroutines split the stream into pieces
// of whole rows or tile units, from any start: the result is the plain
// loop's.
func TestHostStridedParallel(t *testing.T) {
	testdev.HostOnly(t)
	r := rand.New(rand.NewPCG(rand.Uint64(), 3))
	cases := []struct {
		name  string
		shape []int
		perm  []int
		flip  bool
		item  int64
	}{
		{"transposed", []int{1024, 1536}, []int{1, 0}, false, 4},
		{"3-D (0,2,1)", []int{16, 256, 300}, []int{0, 2, 1}, false, 4},
		{"row slice", []int{2048, 1024}, []int{0, 1}, false, 8},
		{"flipped", []int{1024, 1030}, []int{0, 1}, true, 8},
		// Elements wider than a cache line (records of 128 bytes).
		{"flipped, wide elements", []int{320, 128}, []int{0, 1}, true, 128},
		{"transposed, wide elements", []int{100, 420}, []int{1, 0}, false, 128},
		{"4-D (0,3,2,1), wide elements", []int{2100, 4, 2, 2}, []int{0, 3, 2, 1}, false, 128},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := contiguousStrides(c.shape, c.item)
			n := c.item
			for _, d := range c.shape {
				n *= int64(d)
			}
			mem := make([]byte, n)
			for i := range mem {
				mem[i] = byte(r.Uint32())
			}
			shape := make([]int, len(c.perm))
			strides := make([]int64, len(c.perm))
			var zero int64
			for i, p := range c.perm {
				shape[i], strides[i] = c.shape[p], ps[p]
				if c.flip {
					zero += int64(shape[i]-1) * strides[i]
					strides[i] = -strides[i]
				}
			}
			h, err := devarray.NewHostStrided(mem, zero, shape, strides, c.item)
			require.NoError(t, err)
			want := plainGather(mem, zero, shape, strides, c.item)
			for _, lo := range []int64{0, 4096*3 + 5} {
				got := make([]byte, int64(len(want))-lo)
				require.NoError(t, h.GatherOn(got, lo, 3))
				require.Equal(t, want[lo:], got, "gather from %d", lo)
			}
			fresh := make([]byte, len(want))
			for i := range fresh {
				fresh[i] = byte(r.Uint32())
			}
			require.NoError(t, h.ScatterOn(fresh, 0, 3))
			require.Equal(t, fresh, plainGather(mem, zero, shape, strides, c.item))
		})
	}
}
