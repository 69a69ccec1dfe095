package ptx

import (
	"encoding/binary"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// samplesModule parses testdata/samples.ptx, nvcc 11.8's PTX of samples.cu.
func samplesModule(t *testing.T) *Module {
	t.Helper()
	src, err := os.ReadFile("testdata/samples.ptx")
	require.NoError(t, err)
	m, err := Parse(string(src))
	require.NoError(t, err)
	return m
}

// launch runs kernel name of m with pointer and scalar parameters.
func launch(t *testing.T, m *Module, name string, grid, block [3]uint32, h *hostMem, args ...any) Stats {
	t.Helper()
	k, ok := m.Kernel(name)
	require.True(t, ok, name)
	var p []byte
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			for len(p)%8 != 0 {
				p = append(p, 0)
			}
			p = binary.LittleEndian.AppendUint64(p, addr(v))
		case int32:
			for len(p)%4 != 0 {
				p = append(p, 0)
			}
			p = binary.LittleEndian.AppendUint32(p, uint32(v))
		}
	}
	st, err := k.Run(Launch{Grid: grid, Block: block, Params: p, Global: h})
	require.NoError(t, err, name)
	runtime.KeepAlive(h)
	return st
}

func TestSampleMatrixMul(t *testing.T) {
	m := samplesModule(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 11))
	const hA, wA, wB = 32, 48, 64
	h := &hostMem{}
	a, b, c := h.alloc(4*hA*wA, rng), h.alloc(4*wA*wB, rng), h.alloc(4*hA*wB, rng)
	fillFloats(a, 4, rng)
	fillFloats(b, 4, rng)
	launch(t, m, "matrixMul", [3]uint32{wB / 16, hA / 16, 1}, [3]uint32{16, 16, 1}, h, c, a, b, int32(wA), int32(wB))
	f := func(buf []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])) }
	for y := 0; y < hA; y++ {
		for x := 0; x < wB; x++ {
			var sum float32
			for k := 0; k < wA; k++ { // __fmaf_rn in order: the same bits
				sum = float32(math.FMA(float64(f(a, y*wA+k)), float64(f(b, k*wB+x)), float64(sum)))
			}
			require.Equal(t, math.Float32bits(sum), math.Float32bits(f(c, y*wB+x)), "C[%d][%d]", y, x)
		}
	}
}

func TestSampleReduceShfl(t *testing.T) {
	m := samplesModule(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 12))
	n := 1000 + rng.IntN(3000)
	const block = 256
	blocks := (n + block - 1) / block
	h := &hostMem{}
	in, out := h.alloc(4*n, rng), h.alloc(4*blocks, rng)
	launch(t, m, "reduceShfl", [3]uint32{uint32(blocks), 1, 1}, [3]uint32{block, 1, 1}, h, in, out, int32(n))
	for b := 0; b < blocks; b++ {
		var want int32
		for i := b * block; i < min(n, (b+1)*block); i++ {
			want += int32(binary.LittleEndian.Uint32(in[4*i:]))
		}
		require.Equal(t, want, int32(binary.LittleEndian.Uint32(out[4*b:])), "block %d", b)
	}
}

func TestSampleHistogram(t *testing.T) {
	m := samplesModule(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 13))
	n := 5000 + rng.IntN(5000)
	h := &hostMem{}
	data, hist := h.alloc(n, rng), h.alloc(4*256, rng)
	clear(hist)
	launch(t, m, "histogram256", [3]uint32{7, 1, 1}, [3]uint32{192, 1, 1}, h, data, int32(n), hist)
	var want [256]uint32
	for _, v := range data {
		want[v]++
	}
	require.Equal(t, want[:], u32s(hist))
}

func TestSampleBitonicSort(t *testing.T) {
	m := samplesModule(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 14))
	h := &hostMem{}
	d := h.alloc(4*1024*3, rng)
	orig := u32s(d)
	launch(t, m, "bitonicSort", [3]uint32{3, 1, 1}, [3]uint32{512, 1, 1}, h, d)
	got := u32s(d)
	for b := 0; b < 3; b++ {
		want := slices.Clone(orig[b*1024 : (b+1)*1024])
		slices.Sort(want)
		require.Equal(t, want, got[b*1024:(b+1)*1024], "block %d sorted", b)
	}
}

func TestSampleVote(t *testing.T) {
	m := samplesModule(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 15))
	const n = 128
	h := &hostMem{}
	in, out := h.alloc(4*n, rng), h.alloc(16*n, rng)
	for i := 0; i < n; i++ {
		v := int32(rng.IntN(200) - 100)
		if i >= 64 && i < 96 {
			v = int32(1 + rng.IntN(100)) // one warp all positive
		}
		binary.LittleEndian.PutUint32(in[4*i:], uint32(v))
	}
	launch(t, m, "voteOps", [3]uint32{2, 1, 1}, [3]uint32{64, 1, 1}, h, in, out)
	got := u32s(out)
	for w := 0; w < n/32; w++ {
		var ballot, even uint32
		for l := 0; l < 32; l++ {
			v := int32(binary.LittleEndian.Uint32(in[4*(32*w+l):]))
			if v > 0 {
				ballot |= 1 << l
			}
			if v&1 == 0 {
				even |= 1 << l
			}
		}
		for l := 0; l < 32; l++ {
			i := 32*w + l
			m := uint32(0)
			if even&(1<<l) != 0 {
				m = even
			}
			require.Equal(t, []uint32{ballot, b2u32(ballot == 0xffffffff), b2u32(ballot != 0), m}, got[4*i:4*i+4], "thread %d", i)
		}
	}
}

func b2u32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func TestSampleAtomics(t *testing.T) {
	m := samplesModule(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 16))
	h := &hostMem{}
	c, u, ull, f, d := h.alloc(28, rng), h.alloc(16, rng), h.alloc(8, rng), h.alloc(4, rng), h.alloc(8, rng)
	ci := []int32{5, 5, -1, 0, -1, 0, 0}
	for i, v := range ci {
		binary.LittleEndian.PutUint32(c[4*i:], uint32(v))
	}
	for i, v := range []uint32{0, 0, 0, 3} {
		binary.LittleEndian.PutUint32(u[4*i:], v)
	}
	clear(ull)
	clear(f)
	clear(d)
	const threads = 96
	launch(t, m, "atomicOps", [3]uint32{3, 1, 1}, [3]uint32{32, 1, 1}, h, c, u, ull, f, d)
	x := int32(0)
	for i := int32(0); i < threads; i++ {
		x ^= i
	}
	nt := int32(threads)
	require.Equal(t, []uint32{uint32(5 + nt), uint32(5 - nt), uint32(nt - 1), uint32(-(nt - 1)), 0, 0xffffffff, uint32(x)}, u32s(c))
	// inc wraps at 100: 96 increments; dec from 0 wraps to 1000 then counts down
	require.Equal(t, uint32(96), u32s(u)[0])
	require.Equal(t, uint32(1000-95), u32s(u)[1])
	require.Equal(t, uint32(threads), u32s(u)[2], "cas chain 0->1->...->96 in thread order")
	require.Equal(t, uint32(7), u32s(u)[3])
	require.Equal(t, uint64(threads*(threads-1)/2), binary.LittleEndian.Uint64(ull))
	require.Equal(t, float32(threads)*0.5, math.Float32frombits(binary.LittleEndian.Uint32(f)))
	require.Equal(t, float64(threads)*0.25, math.Float64frombits(binary.LittleEndian.Uint64(d)))
	_ = bits.OnesCount32
}
