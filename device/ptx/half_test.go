package ptx

import (
	"fmt"
	"math"
	"math/big"
	"testing"

	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/stretchr/testify/require"
)

const (
	isaHalfRn   = "Rounding modifiers: .rn — mantissa LSB rounds to nearest even"
	isaHalfSat  = "add.sat.{f16, f16x2} clamps the result to [0.0, 1.0]. NaN results are flushed to +0.0f."
	isaHalfFtz  = "mul.ftz.{f16, f16x2} flushes subnormal inputs and results to sign-preserving zero."
	isaHalfX2   = "For .f16x2 and .bf16x2 instruction type, forms input vectors by half word values from source operands. Half-word operands are then added in parallel to produce .f16x2 or .bf16x2 result in destination. (fA[0] = a[0:15]; fA[1] = a[16:31])"
	isaFmaRelu  = "fma.relu.{f16, f16x2, bf16, bf16x2} clamps the result to 0 if negative. NaN result is converted to canonical NaN."
	isaFma      = "Performs a fused multiply-add with no loss of precision in the intermediate product and addition."
	isaMinNaN   = "if (isNaN(a) && isNaN(b)) d = NaN; if (.NaN && (isNaN(a) || isNaN(b))) d = NaN; else if (isNaN(a)) d = b; else if (isNaN(b)) d = a; else d = (a < b) ? a : b;"
	isaMinZero  = "If values of both inputs are 0.0, then +0.0 > -0.0."
	isaXorsign  = "If .abs modifier is specified, the magnitude of destination operand d is the minimum of absolute values of both the input arguments. If .xorsign modifier is specified, the sign bit of destination d is equal to the XOR of the sign bits of both the inputs."
	isaSetTrue  = "If result is True, 0xffffffff is written for destination types .u32/.s32. 0xffff is written for destination types .u16/.s16. 1.0 in target precision floating point format is written for destination type .f16, .bf16."
	isaSetPack  = "If the source type is .f16x2 or .bf16x2 then result of individual operations are packed in the 32-bit destination operand."
	isaSetpPack = "t[0] = (fA[0] CmpOp fB[0]) ? 1 : 0; t[1] = (fA[1] CmpOp fB[1]) ? 1 : 0; p = BoolOp(t[0], c); q = BoolOp(t[1], c);"
	isaUnord    = "If either operand is NaN, then the result of these comparisons is True."
)

// f16 and bf16 bit patterns used below, from the formats' definitions.
const (
	h1p10   = 0x3c01 // 1 + 2^-10
	h1p9    = 0x3c02 // 1 + 2^-9
	hm1p9   = 0xbc02 // -(1 + 2^-9)
	h2m11   = 0x1000 // 2^-11
	hMin    = 0x0400 // 2^-14, the least normal
	h075    = 0x3a00 // 0.75
	bf2m8   = 0x3b80 // 2^-8
	bf1p7   = 0x3f81 // 1 + 2^-7
	bf1p16  = 0x3f88 // 1 + 2^-4
	bf2m100 = 0x0d80 // 2^-100
)

func TestHalfArithmeticISA(t *testing.T) {
	x2 := func(hi, lo uint64) uint64 { return hi<<16 | lo }
	cases := []insnCase{
		{name: "add.f16 tie to even down", isa: isaHalfRn, insn: "add.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{h1, h2m11}, want: h1},
		{name: "add.rn.f16 tie to even up", isa: isaHalfRn, insn: "add.rn.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{h1p10, h2m11}, want: h1p9},
		{name: "add.f16 65504+16 ties to inf", isa: isaHalfRn, insn: "add.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{hMax, 0x4c00}, want: hInf},
		{name: "add.sat.f16 above 1", isa: isaHalfSat, insn: "add.sat.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{h075, hHalf}, want: h1},
		{name: "add.sat.f16 NaN", isa: isaHalfSat, insn: "add.sat.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{hNaN, h1}, want: 0},
		{name: "add.f16 NaN", isa: "Half-precision instructions return an unspecified NaN (the interpreter: canonical 0x7fff)", insn: "add.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0xfe01, h1}, want: hNaN},
		{name: "sub.f16x2", isa: isaHalfX2, insn: "sub.f16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(h2, h1), x2(h1, h2)}, want: x2(h1, hNegOne)},
		{name: "sub.sat.f16x2", isa: isaHalfSat, insn: "sub.sat.f16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(h2, h1), x2(h1, h2)}, want: x2(h1, 0)},
		{name: "mul.f16 subnormal result", isa: isaHalfRn, insn: "mul.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{hMin, hHalf}, want: 0x0200},
		{name: "mul.ftz.f16 subnormal result", isa: isaHalfFtz, insn: "mul.ftz.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x8000 | hMin, hHalf}, want: 0x8000},
		{name: "mul.ftz.f16 subnormal input", isa: isaHalfFtz, insn: "mul.ftz.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x0001, h2}, want: 0},
		{name: "mul.f16 subnormal input", isa: isaHalfRn, insn: "mul.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x0001, h2}, want: 0x0002},
		// (1+2^-10)^2 - (1+2^-9) = 2^-20 exactly: fused, a subnormal; rounded first, 0
		{name: "fma.rn.f16 fused", isa: isaFma, insn: "fma.rn.f16 %d, %a, %b, %c", dt: "b16", st: []string{"b16", "b16", "b16"}, in: []uint64{h1p10, h1p10, hm1p9}, want: 0x0010},
		{name: "fma.rn.ftz.f16 fused subnormal flushed", isa: "fma.ftz.{f16, f16x2} flushes subnormal inputs and results to sign-preserving zero.", insn: "fma.rn.ftz.f16 %d, %a, %b, %c", dt: "b16", st: []string{"b16", "b16", "b16"}, in: []uint64{h1p10, h1p10, hm1p9}, want: 0},
		{name: "fma.rn.relu.f16 negative", isa: isaFmaRelu, insn: "fma.rn.relu.f16 %d, %a, %b, %c", dt: "b16", st: []string{"b16", "b16", "b16"}, in: []uint64{h1, hNegOne, hHalf}, want: 0},
		{name: "fma.rn.relu.f16 NaN", isa: isaFmaRelu, insn: "fma.rn.relu.f16 %d, %a, %b, %c", dt: "b16", st: []string{"b16", "b16", "b16"}, in: []uint64{hInf, 0, h1}, want: hNaN},
		{name: "fma.rn.sat.f16x2", isa: "fma.sat.{f16, f16x2} clamps the result to [0.0, 1.0]. NaN results are flushed to +0.0f.", insn: "fma.rn.sat.f16x2 %d, %a, %b, %c", dt: "b32", st: []string{"b32", "b32", "b32"}, in: []uint64{x2(h2, h2), x2(h2, hNegOne), x2(h1, 0)}, want: x2(h1, 0)},
		{name: "fma.rn.f16x2 halves apart", isa: isaHalfX2, insn: "fma.rn.f16x2 %d, %a, %b, %c", dt: "b32", st: []string{"b32", "b32", "b32"}, in: []uint64{x2(h2, h1p10), x2(hHalf, h1p10), x2(h1, hm1p9)}, want: x2(h2, 0x0010)},
		// bf16: (1+2^-4)^2 = 1 + 2^-3 + 2^-8, a midpoint; + 2^-100 lies above it
		{name: "fma.rn.bf16 sticky addend", isa: isaFma, insn: "fma.rn.bf16 %d, %a, %b, %c", dt: "b16", st: []string{"b16", "b16", "b16"}, in: []uint64{bf1p16, bf1p16, bf2m100}, want: 0x3f91},
		{name: "fma.rn.bf16 midpoint to even", isa: isaHalfRn, insn: "fma.rn.bf16 %d, %a, %b, %c", dt: "b16", st: []string{"b16", "b16", "b16"}, in: []uint64{bf1p16, bf1p16, 0}, want: 0x3f90},
		{name: "fma.rn.relu.bf16x2", isa: isaFmaRelu, insn: "fma.rn.relu.bf16x2 %d, %a, %b, %c", dt: "b32", st: []string{"b32", "b32", "b32"}, in: []uint64{x2(bf1, bf1), x2(0xbf80, bf1), x2(0, bf1)}, want: x2(0, 0x4000)},
		{name: "add.rn.bf16 tie to even", isa: isaHalfRn, insn: "add.rn.bf16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{bf1p7, bf2m8}, want: 0x3f82},
		{name: "sub.bf16x2", isa: isaHalfX2 + " (1 - 2^-8 is a bfloat16: 0x3f7f)", insn: "sub.rn.bf16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(bf1, bf1), x2(bf2m8, 0x4000)}, want: x2(0x3f7f, 0xbf80)},
		{name: "mul.rn.bf16 overflow", isa: isaHalfRn, insn: "mul.rn.bf16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{bfMax, 0x4000}, want: bfInf},
		{name: "neg.f16 keeps a NaN's payload", isa: "neg: Negate the sign of a and store the result in d.", insn: "neg.f16 %d, %a", dt: "b16", st: []string{"b16"}, in: []uint64{0x7e01}, want: 0xfe01},
		{name: "neg.ftz.f16 subnormal", isa: "neg.ftz.{f16, f16x2} flushes subnormal inputs and results to sign-preserving zero.", insn: "neg.ftz.f16 %d, %a", dt: "b16", st: []string{"b16"}, in: []uint64{0x0001}, want: 0x8000},
		{name: "abs.f16x2", isa: "abs: Take absolute value of a and store the result in d.", insn: "abs.f16x2 %d, %a", dt: "b32", st: []string{"b32"}, in: []uint64{x2(hNegOne, h2)}, want: x2(h1, h2)},
		{name: "neg.bf16x2", isa: "neg: Negate the sign of a and store the result in d.", insn: "neg.bf16x2 %d, %a", dt: "b32", st: []string{"b32"}, in: []uint64{x2(bf1, 0x8000)}, want: x2(0xbf80, 0)},
		{name: "abs.bf16", isa: "abs: Take absolute value of a and store the result in d.", insn: "abs.bf16 %d, %a", dt: "b16", st: []string{"b16"}, in: []uint64{0xc000}, want: 0x4000},
		{name: "min.f16 -0 +0", isa: isaMinZero, insn: "min.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0, 0x8000}, want: 0x8000},
		{name: "max.f16 -0 +0", isa: isaMinZero, insn: "max.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x8000, 0}, want: 0},
		{name: "min.f16 NaN", isa: isaMinNaN, insn: "min.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x7e01, h2}, want: h2},
		{name: "min.NaN.f16", isa: isaMinNaN + " If .NaN modifier is specified, then the result is canonical NaN if either of the inputs is NaN.", insn: "min.NaN.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x7e01, h2}, want: hNaN},
		{name: "max.f16 two NaNs", isa: isaMinNaN, insn: "max.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x7e01, 0xfe02}, want: hNaN},
		{name: "max.f16x2", isa: isaHalfX2, insn: "max.f16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(hNegOne, h2), x2(h1, h1)}, want: x2(h1, h2)},
		{name: "max.NaN.bf16x2", isa: isaMinNaN, insn: "max.NaN.bf16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(bfNaN, 0xbf80), x2(bf1, bf1)}, want: x2(bfNaN, bf1)},
		{name: "min.bf16", isa: isaMinNaN, insn: "min.bf16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0xbf80, bf1}, want: 0xbf80},
		{name: "min.xorsign.abs.f16", isa: isaXorsign, insn: "min.xorsign.abs.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0xc000, 0x4200}, want: 0xc000},
		{name: "max.xorsign.abs.bf16", isa: isaXorsign, insn: "max.xorsign.abs.bf16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0xc000, 0xc040}, want: 0x4040},
		{name: "max.ftz.f16 subnormals", isa: "max.ftz.{f16, f16x2} flushes subnormal inputs and results to sign-preserving zero.", insn: "max.ftz.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0x0003, 0x8000}, want: 0},
		{name: "add.bf16 .sat refused", isa: "add{.rnd}.bf16 d, a, b; (no .sat)", insn: "add.sat.bf16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0, 0}, err: ".sat are not defined for .bf16"},
		{name: "add.rz.f16 refused", isa: ".rnd = { .rn };", insn: "add.rz.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{0, 0}, err: "rounds to nearest"},

		// comparisons
		{name: "set.gt.f16x2.f16x2", isa: isaSetTrue + " " + isaSetPack, insn: "set.gt.f16x2.f16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(h2, h1), x2(h1, h2)}, want: x2(h1, 0)},
		{name: "set.lt.u32.f16x2", isa: isaSetTrue + " " + isaSetPack, insn: "set.lt.u32.f16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(h2, h1), x2(h1, h2)}, want: x2(0, 0xffff)},
		{name: "set.eq.u32.f16", isa: isaSetTrue, insn: "set.eq.u32.f16 %d, %a, %b", dt: "b32", st: []string{"b16", "b16"}, in: []uint64{0x8000, 0}, want: 0xffffffff},
		{name: "set.eq.s16.f16", isa: isaSetTrue, insn: "set.eq.s16.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{h1, h1}, want: 0xffff},
		{name: "set.ltu.f16.f16 NaN", isa: isaSetTrue + " " + isaUnord, insn: "set.ltu.f16.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{hNaN, h1}, want: h1},
		{name: "set.lt.f16.f16 NaN", isa: "The ordered comparisons are eq, ne, lt, le, gt, ge. If either operand is NaN, the result is False.", insn: "set.lt.f16.f16 %d, %a, %b", dt: "b16", st: []string{"b16", "b16"}, in: []uint64{hNaN, h1}, want: 0},
		{name: "set.ge.bf16x2.bf16x2", isa: isaSetTrue + " " + isaSetPack, insn: "set.ge.bf16x2.bf16x2 %d, %a, %b", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(bf1, 0), x2(bf1, 0x8000)}, want: x2(bf1, bf1)},
		{name: "set.lt.f16.f32 refused", isa: "set.CmpOp{.ftz}.f16.stype d, a, b; (the interpreter compares half-precision sources only)", insn: "set.lt.f16.f32 %d, %a, %b", dt: "b16", st: []string{"f32", "f32"}, in: []uint64{0, 0}, err: "set's destination type is .u32, .s32 or .f32"},
		{name: "setp.lt.f16", isa: "t = (a CmpOp b) ? 1 : 0; p = BoolOp(t, c);", insn: "setp.lt.f16 %p, %a, %b; selp.u32 %d, 1, 0, %p", dt: "b32", st: []string{"b16", "b16"}, in: []uint64{hNegOne, 0x8000}, want: 1},
		{name: "setp.gt.bf16 NaN", isa: "If either operand is NaN, the result is False.", insn: "setp.gt.bf16 %p, %a, %b; selp.u32 %d, 1, 0, %p", dt: "b32", st: []string{"b16", "b16"}, in: []uint64{bfNaN, bf1}, want: 0},
		{name: "setp.lt.f16x2 p|q", isa: isaSetpPack, insn: "setp.lt.f16x2 %p|%q, %a, %b; selp.u32 %d, 1, 0, %p; selp.u32 %rd1x, 2, 0, %q; add.u32 %d, %d, %rd1x", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(h1, h2), x2(h2, h1)}, want: 2},
		{name: "setp.lt.f16x2 low half", isa: isaSetpPack, insn: "setp.lt.f16x2 %p|%q, %a, %b; selp.u32 %d, 1, 0, %p; selp.u32 %rd1x, 2, 0, %q; add.u32 %d, %d, %rd1x", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(h2, h1), x2(h1, h2)}, want: 1},
		{name: "setp.ge.and.bf16x2 !c", isa: isaSetpPack, insn: "setp.eq.u32 %p, %d, 0; setp.ge.and.bf16x2 %p|%q, %a, %b, !%p; selp.u32 %d, 1, 0, %p; selp.u32 %rd1x, 2, 0, %q; add.u32 %d, %d, %rd1x", dt: "b32", st: []string{"b32", "b32"}, in: []uint64{x2(bf1, bf1), x2(0, 0)}, want: 0},
	}
	for i := range cases {
		if c := &cases[i]; c.dt == "b32" {
			c.insn = fixTemp(c.insn)
		}
	}
	runInsnCases(t, cases)
}

// fixTemp gives the cases that need a second 32-bit register one: %d
// itself is declared by runInsn; %rd1x reuses the destination's width.
func fixTemp(insn string) string {
	const tmp = "%rd1x"
	for i := 0; i+len(tmp) <= len(insn); i++ {
		if insn[i:i+len(tmp)] == tmp {
			return "{ .reg .b32 %rd1x; mov.u32 %d, 0; " + insn + "; }"
		}
	}
	return insn
}

// refHalf rounds x to nearest even in a format of mant stored mantissa
// bits and exponent bias bias, with math/big: the reference the kernel
// tests and the sweep below compare with, computed apart from the
// interpreter's rounding.
func refHalf(x *big.Float, mant uint, bias int) uint16 {
	var sign uint16
	a := new(big.Float).SetPrec(0).Set(x)
	if a.Sign() < 0 {
		sign = 0x8000
		a.Neg(a)
	}
	inf := uint32(2*bias+1) << mant
	switch {
	case a.Sign() == 0:
		return sign
	case a.IsInf():
		return sign | uint16(inf)
	}
	exp := a.MantExp(nil) - 1 // a = m * 2^exp, 1 <= m < 2
	emin := 1 - bias
	if exp < emin {
		exp = emin
	}
	q := new(big.Float).SetPrec(2000).SetMantExp(a, int(mant)-exp)
	r, _ := q.Int(nil) // q >= 0: the floor
	frac := new(big.Float).SetPrec(2000).Sub(q, new(big.Float).SetInt(r))
	c := frac.Cmp(big.NewFloat(0.5))
	bits := uint64(exp-emin)<<mant + r.Uint64()
	if c > 0 || c == 0 && bits&1 == 1 {
		bits++
	}
	if bits >= uint64(inf) {
		return sign | uint16(inf)
	}
	return sign | uint16(bits)
}

// refHalfToBig is a half-precision value as a big.Float (exactly), NaN
// excepted.
func refHalfToBig(h uint16, mant uint, bias int) *big.Float {
	e := int(h>>mant) & (2*bias + 1)
	m := int64(h) & (1<<mant - 1)
	if e == 2*bias+1 && m == 0 {
		return new(big.Float).SetInf(h&0x8000 != 0)
	}
	if e != 0 {
		m |= 1 << mant
	} else {
		e = 1
	}
	v := new(big.Float).SetPrec(0).SetMantExp(new(big.Float).SetInt64(m), e-bias-int(mant))
	if h&0x8000 != 0 {
		v.Neg(v)
	}
	return v
}

// TestHalfArithmeticSweep checks add, sub, mul and fma on random finite
// operands of both formats against math/big's exact result rounded once
// to nearest even.
func TestHalfArithmeticSweep(t *testing.T) {
	rng := rand.For(t)
	type format struct {
		name string
		mant uint
		bias int
	}
	for _, f := range []format{{"f16", 10, 15}, {"bf16", 7, 127}} {
		inf := uint16((2*f.bias + 1) << f.mant)
		draw := func() uint16 {
			for {
				h := uint16(rng.Uint32())
				if rng.IntN(2) == 0 { // near 1: results that round
					h = uint16(f.bias-2+rng.IntN(5))<<f.mant | uint16(rng.IntN(1<<f.mant)) | h&0x8000
				}
				if h&0x7fff < inf {
					return h
				}
			}
		}
		for _, op := range []string{"add", "sub", "mul", "fma"} {
			n := 2
			if op == "fma" {
				n = 3
			}
			insn := op + ".rn." + f.name + " %d, %a, %b"
			if n == 3 {
				insn += ", %c"
			}
			src := ".visible .entry k(.param .u64 out)\n{\n.reg .b64 %rd<4>; .reg .b32 %r<2>; .reg .b16 %d, %a, %b, %c;\n" +
				"ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 8;\nadd.s64 %rd3, %rd1, %rd2;\n" +
				"ld.global.b16 %a, [%rd3+2];\nld.global.b16 %b, [%rd3+4];\nld.global.b16 %c, [%rd3+6];\n" + insn +
				";\nst.global.b16 [%rd3], %d;\nret;\n}\n"
			const lanes = 256
			out := make([]byte, 8*lanes)
			in := make([][3]uint16, lanes)
			for i := range in {
				for j := 0; j < n; j++ {
					in[i][j] = draw()
					out[8*i+2+2*j], out[8*i+3+2*j] = byte(in[i][j]), byte(in[i][j]>>8)
				}
			}
			_, err := runOne(t, src, "k", [3]uint32{1, 1, 1}, [3]uint32{lanes, 1, 1}, out, true)
			require.NoError(t, err, "%s", insn)
			for i := range in {
				a, b, c := refHalfToBig(in[i][0], f.mant, f.bias), refHalfToBig(in[i][1], f.mant, f.bias), refHalfToBig(in[i][2], f.mant, f.bias)
				r := new(big.Float).SetPrec(0)
				switch op {
				case "add":
					r.SetPrec(4000).Add(a, b)
				case "sub":
					r.SetPrec(4000).Sub(a, b)
				case "mul":
					r.SetPrec(4000).Mul(a, b)
				case "fma":
					r.SetPrec(4000).Mul(a, b)
					r.Add(r, c)
				}
				want := refHalf(r, f.mant, f.bias)
				if r.Sign() == 0 {
					// an exact zero: IEEE 754's signs of zero in round to nearest
					want = zeroSign(op, in[i], a, b, c)
				}
				got := uint16(out[8*i]) | uint16(out[8*i+1])<<8
				require.Equal(t, fmt.Sprintf("%#04x", want), fmt.Sprintf("%#04x", got), "%s %#04x %#04x %#04x", insn, in[i][0], in[i][1], in[i][2])
			}
		}
	}
}

// TestCvtHalfSweep checks cvt.rn.{f16,bf16}.{f32,f64} on random values
// against math/big's rounding.
func TestCvtHalfSweep(t *testing.T) {
	rng := rand.For(t)
	for _, c := range []struct {
		dt, st string
		mant   uint
		bias   int
	}{{"f16", "f32", 10, 15}, {"bf16", "f32", 7, 127}, {"f16", "f64", 10, 15}, {"bf16", "f64", 7, 127}} {
		insn := "cvt.rn." + c.dt + "." + c.st + " %d, %a"
		src := ".visible .entry k(.param .u64 out)\n{\n.reg .b64 %rd<4>; .reg .b32 %r<2>; .reg .b16 %d; .reg ." + c.st + " %a;\n" +
			"ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 16;\nadd.s64 %rd3, %rd1, %rd2;\n" +
			"ld.global." + c.st + " %a, [%rd3+8];\n" + insn + ";\nst.global.b16 [%rd3], %d;\nret;\n}\n"
		const lanes = 512
		out := make([]byte, 16*lanes)
		xs := make([]float64, lanes)
		for i := range xs {
			// magnitudes around the format's range, subnormals included
			e := rng.IntN(2*c.bias+30) - c.bias - int(c.mant) - 8
			x := math.Ldexp(1+rng.Float64(), e)
			if rng.IntN(2) == 0 {
				x = -x
			}
			if c.st == "f32" {
				x = float64(float32(x))
				putU64(out[16*i+8:], uint64(math.Float32bits(float32(x))))
			} else {
				putU64(out[16*i+8:], math.Float64bits(x))
			}
			xs[i] = x
		}
		_, err := runOne(t, src, "k", [3]uint32{1, 1, 1}, [3]uint32{lanes, 1, 1}, out, true)
		require.NoError(t, err)
		for i, x := range xs {
			want := refHalf(new(big.Float).SetFloat64(x), c.mant, c.bias)
			got := uint16(out[16*i]) | uint16(out[16*i+1])<<8
			require.Equal(t, fmt.Sprintf("%#04x", want), fmt.Sprintf("%#04x", got), "%s of %g (%#x)", insn, x, math.Float64bits(x))
		}
	}
}

// zeroSign is the sign IEEE 754 gives an exact zero result in round to
// nearest: +0 for a sum of operands of opposite signs, the operands' sign
// when both are zeros of one sign; a product's is the XOR of its factors'.
func zeroSign(op string, in [3]uint16, a, b, c *big.Float) uint16 {
	sa, sb, sc := in[0]&0x8000, in[1]&0x8000, in[2]&0x8000
	switch op {
	case "mul":
		return sa ^ sb
	case "add":
		return sa & sb
	case "sub":
		return sa &^ sb
	}
	if (a.Sign() == 0 || b.Sign() == 0) && c.Sign() == 0 {
		return (sa ^ sb) & sc
	}
	return 0
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}
