package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"os"
	"testing"

	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/stretchr/testify/require"
)

// The reference of these tests is math/big: each half-precision operation
// is computed exactly and rounded once (refHalf), as the PTX ISA defines
// them, apart from the interpreter's own arithmetic.

// f16 and bf16 in the reference, by format.
var (
	refF16  = refFmt{mant: 10, bias: 15}
	refBF16 = refFmt{mant: 7, bias: 127}
)

type refFmt struct {
	mant uint
	bias int
}

func (f refFmt) big(h uint16) *big.Float { return refHalfToBig(h, f.mant, f.bias) }
func (f refFmt) rn(x *big.Float) uint16  { return refHalf(x, f.mant, f.bias) }
func (f refFmt) f32(h uint16) float32    { v, _ := f.big(h).Float32(); return v }
func (f refFmt) fromF32(v float32) uint16 {
	return f.rn(new(big.Float).SetFloat64(float64(v)))
}

// fma is a*b+c rounded once.
func (f refFmt) fma(a, b, c uint16) uint16 {
	r := new(big.Float).SetPrec(4000).Mul(f.big(a), f.big(b))
	return f.rn(r.Add(r, f.big(c)))
}

func (f refFmt) mul(a, b uint16) uint16 {
	return f.rn(new(big.Float).SetPrec(4000).Mul(f.big(a), f.big(b)))
}

func (f refFmt) sub(a, b uint16) uint16 {
	return f.rn(new(big.Float).SetPrec(4000).Sub(f.big(a), f.big(b)))
}

// max and min of finite values (+0 above -0).
func (f refFmt) max(a, b uint16) uint16 {
	c := f.big(a).Cmp(f.big(b))
	if c > 0 || c == 0 && a&0x8000 == 0 {
		return a
	}
	return b
}

func (f refFmt) min(a, b uint16) uint16 {
	if f.max(a, b) == a && a != b {
		return b
	}
	return a
}

func readKernelPTX(t *testing.T, name string) *Module {
	t.Helper()
	src, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	m, err := Parse(string(src))
	require.NoError(t, err, name)
	return m
}

// TestHalf2Kernel runs haxpy2 of testdata/half2.cu (nvcc 11.8's PTX,
// compute_80) on random inputs and compares every element, bit for bit,
// with the reference.
func TestHalf2Kernel(t *testing.T) {
	m := readKernelPTX(t, "half2.ptx")
	rng := rand.For(t)
	const n = 1000
	a := float32(rng.Float64()*4 - 2)
	h := &hostMem{}
	x, y, out, gt := make([]byte, 8*n), make([]byte, 4*n), make([]byte, 8*n), make([]byte, 4*n)
	h.bufs = [][]byte{x, y, out, gt}
	xs := make([][2]float32, n)
	ys := make([][2]uint16, n)
	for i := range n {
		scale := 4.0
		if rng.IntN(8) == 0 {
			scale = 2000 // beyond the kernel's clamps at ±100
		}
		for j := range 2 {
			xs[i][j] = float32((rng.Float64()*2 - 1) * scale)
			ys[i][j] = refF16.fromF32(float32(rng.Float64()*8 - 4))
			binary.LittleEndian.PutUint32(x[8*i+4*j:], math.Float32bits(xs[i][j]))
			binary.LittleEndian.PutUint16(y[4*i+2*j:], ys[i][j])
		}
	}
	launch(t, m, "haxpy2", [3]uint32{(n + 127) / 128, 1, 1}, [3]uint32{128, 1, 1}, h,
		int32(n), int32(math.Float32bits(a)), x, y, out, gt)
	f := refF16
	a16 := f.fromF32(a)
	lo, hi := f.fromF32(-100), f.fromF32(100)
	for i := range n {
		var wantGT uint32
		for j := range 2 { // j = 0: .x, the low half
			xh := f.fromF32(xs[i][j])
			r := f.fma(a16, xh, ys[i][j])
			r = f.min(f.max(r, lo), hi)
			if f.big(r).Cmp(f.big(ys[i][j])) > 0 {
				wantGT += 1 << j
			}
			o := f.sub(f.mul(r, xh), ys[i][j]&0x7fff)
			gotY := binary.LittleEndian.Uint16(y[4*i+2*j:])
			gotO := binary.LittleEndian.Uint32(out[8*i+4*j:])
			require.Equal(t, fmt.Sprintf("%#04x", r), fmt.Sprintf("%#04x", gotY), "y[%d].%d: fma(%#04x, %#04x, %#04x) clamped", i, j, a16, xh, ys[i][j])
			require.Equal(t, math.Float32bits(f.f32(o)), gotO, "out[%d].%d", i, j)
		}
		require.Equal(t, wantGT, binary.LittleEndian.Uint32(gt[4*i:]), "gt[%d]", i)
	}
}

// TestBF16Kernel runs bf16axpy of testdata/bf16.cu (nvcc 11.8's PTX,
// compute_80) on random inputs and compares every element, bit for bit,
// with the reference.
func TestBF16Kernel(t *testing.T) {
	m := readKernelPTX(t, "bf16.ptx")
	rng := rand.For(t)
	const n = 1000
	a := float32(rng.NormFloat64())
	h := &hostMem{}
	x, y, out := make([]byte, 4*n), make([]byte, 2*n), make([]byte, 8*n)
	h.bufs = [][]byte{x, y, out}
	xs := make([]float32, n)
	ys := make([]uint16, n)
	for i := range n {
		xs[i] = float32(math.Ldexp(rng.NormFloat64(), rng.IntN(40)-20))
		ys[i] = uint16(math.Float32bits(float32(rng.NormFloat64()*4)) >> 16) // a bfloat16: the upper half of a binary32
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(xs[i]))
		binary.LittleEndian.PutUint16(y[2*i:], ys[i])
	}
	launch(t, m, "bf16axpy", [3]uint32{(n + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}, h,
		int32(n), int32(math.Float32bits(a)), x, y, out)
	f := refBF16
	ab := f.fromF32(a)
	for i := range n {
		xb := f.fromF32(xs[i])
		r := f.max(f.fma(ab, xb, ys[i]), ys[i]|0x8000)
		// the float sum: nvcc contracts the f32 multiply and add into fma.rn.f32
		s := new(big.Float).SetPrec(4000).Mul(f.big(ab), f.big(xb))
		s.Add(s, f.big(ys[i]))
		s32, _ := s.Float32()
		rz := uint16(math.Float32bits(s32) >> 16) // toward zero: the upper half, for a finite value
		require.Equal(t, fmt.Sprintf("%#04x", r), fmt.Sprintf("%#04x", binary.LittleEndian.Uint16(y[2*i:])), "y[%d]", i)
		require.Equal(t, uint32(r)<<16, binary.LittleEndian.Uint32(out[8*i:]), "out[%d]", 2*i)
		require.Equal(t, uint32(rz)<<16, binary.LittleEndian.Uint32(out[8*i+4:]), "out[%d]: rz of %g", 2*i+1, s32)
	}
}
