package isacases

import (
	"fmt"
	"math"
	"math/big"
)

const (
	isaSext     = "The result of conversion is sign-extended to the destination register width for signed integers, and is zero-extended to the destination register width for unsigned, bit-size, and floating-point types."
	isaCvtInt   = "cvt: Convert between different types and sizes. For integer-to-integer conversions the value is sign-extended (signed source) or zero-extended (unsigned source) to the destination size, or chopped to it."
	isaIntSat   = ".sat: For integer destination types, .sat limits the result to MININT..MAXINT for the size of the operation."
	isaFltInt   = "Integer rounding is required for float-to-integer conversions: .rni round to nearest integer, choosing even integer if source is equidistant between two integers; .rzi round to nearest integer in the direction of zero; .rmi round to nearest integer in direction of negative infinity; .rpi round to nearest integer in direction of positive infinity. For float-to-integer conversions, the result is clamped to the destination range by default."
	isaNaNInt   = "In float-to-integer conversions, depending upon conversion types, NaN input results in following value: 1. Zero if source is not .f64 and destination is not .s64, .u64. 2. Otherwise 1 << (BitWidth(dst) - 1) corresponding to the value of (MAXINT >> 1) + 1 for unsigned type or MININT for signed type."
	isaFrnd     = "Floating-point rounding is required for float-to-float conversions that result in loss of precision, and for integer-to-float conversions: .rn mantissa LSB rounds to nearest even; .rz toward zero; .rm toward negative infinity; .rp toward positive infinity."
	isaRndInt   = "cvt.frnd.f32.f32 with an integer rounding modifier (.rni, .rzi, .rmi, .rpi) rounds a float to an integral value in the same type."
	isaCvtFtz   = ".ftz: For .f32 inputs and results, subnormal inputs and results are flushed to sign-preserving zero."
	isaCvtSat   = ".sat: For floating-point destination types, .sat limits the result to the range [0.0, 1.0]. NaN results are flushed to positive zero."
	isaCvtExact = "Conversions to a wider floating-point type (.f64 from .f32, .f32 from .f16 or .bf16) are exact."
	isaRelu     = ".relu: For .f16, .f16x2, .bf16, .bf16x2 destination types, .relu clamps the result to 0 if negative. NaN results are converted to canonical NaN."
	isaNaNOpen  = "The PTX ISA does not give the bits of a NaN result; the interpreter gives the canonical NaN (0x7fffffff, 0x7fffffffffffffff, 0x7fff for half precision)."
)

var intTypes = []string{"s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"}

func width(t string) int {
	var w int
	fmt.Sscanf(t[1:], "%d", &w)
	return w
}

func signed(t string) bool { return t[0] == 's' }

// extend treats the low w bits of v as a signed or unsigned w-bit value
// and returns it as 64 bits.
func extend(v uint64, w int, sgn bool) uint64 {
	if w >= 64 {
		return v
	}
	v &= 1<<w - 1
	if sgn && v>>(w-1)&1 == 1 {
		v |= ^uint64(0) << w
	}
	return v
}

func mask(w int) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return 1<<w - 1
}

func cvtCases() []Case {
	var cs []Case
	// every integer-to-integer conversion, into registers wider than the
	// destination type where it is narrower than 32 bits
	for _, d := range intTypes {
		for _, a := range intTypes {
			if d == a {
				continue
			}
			in := uint64(0x0123456789abcdef)
			sreg := "b32"
			if width(a) == 64 {
				in, sreg = 0xfedcba9876543280, "b64"
			}
			dreg := "b32"
			if width(d) == 64 {
				dreg = "b64"
			}
			v := extend(in, width(a), signed(a))
			want := extend(v, width(d), signed(d)) & mask(Bytes(dreg)*8)
			cs = append(cs, ins("cvt", fmt.Sprintf("%s.%s into %s", d, a, dreg), isaSext,
				fmt.Sprintf("cvt.%s.%s %%d, %%a", d, a), dreg, []string{sreg}, []uint64{in}, want))
		}
	}
	// 32-bit results into 64-bit registers
	for _, c := range []struct {
		d, a string
		in   uint64
	}{{"s32", "s16", 0x8001}, {"u32", "s16", 0x8001}, {"s32", "u32", 0x80000000}, {"s32", "s64", 0x1ffffffff}} {
		v := extend(c.in, width(c.a), signed(c.a))
		cs = append(cs, ins("cvt", fmt.Sprintf("%s.%s into b64", c.d, c.a), isaSext,
			fmt.Sprintf("cvt.%s.%s %%d, %%a", c.d, c.a), "b64", []string{"b64"}, []uint64{c.in}, extend(v, width(c.d), signed(c.d))))
	}
	// saturating integer conversions
	for _, c := range []struct {
		d, a string
		in   int64
	}{{"s8", "s32", 300}, {"s8", "s32", -300}, {"u8", "s32", -5}, {"u8", "u32", 256}, {"s16", "s64", 1 << 40}, {"u16", "s16", -1},
		{"u32", "s64", -1}, {"s32", "u32", -1 << 31}, {"s64", "u64", -1}, {"u64", "s64", -7}, {"s32", "s8", -128}} {
		lo, hi := big.NewInt(0), new(big.Int).Lsh(big.NewInt(1), uint(width(c.d)))
		if signed(c.d) {
			lo = new(big.Int).Neg(new(big.Int).Rsh(hi, 1))
			hi = new(big.Int).Rsh(hi, 1)
		}
		hi.Sub(hi, big.NewInt(1))
		src := extend(uint64(c.in), width(c.a), signed(c.a))
		v := new(big.Int).SetUint64(src)
		if signed(c.a) {
			v = big.NewInt(int64(src))
		}
		if v.Cmp(lo) < 0 {
			v = lo
		}
		if v.Cmp(hi) > 0 {
			v = hi
		}
		dreg := "b32"
		if width(c.d) == 64 {
			dreg = "b64"
		}
		sreg := "b32"
		if width(c.a) == 64 {
			sreg = "b64"
		}
		want := extend(uint64(v.Int64()), width(c.d), signed(c.d))
		if !signed(c.d) {
			want = v.Uint64()
		}
		cs = append(cs, ins("cvt", fmt.Sprintf("sat.%s.%s %d", c.d, c.a, c.in), isaIntSat,
			fmt.Sprintf("cvt.sat.%s.%s %%d, %%a", c.d, c.a), dreg, []string{sreg}, []uint64{uint64(c.in) & mask(8*Bytes(sreg))}, want&mask(8*Bytes(dreg))))
	}
	cs = append(cs, cvtFloatInt()...)
	cs = append(cs, cvtIntFloat()...)
	cs = append(cs, cvtFloatFloat()...)
	cs = append(cs, cvtHalf()...)
	return cs
}

// float-to-integer in every integer rounding mode, saturating, NaN.
func cvtFloatInt() []Case {
	vals := []float64{2.5, -2.5, -0.5, 0.5, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 3e9, -3e9, 1e19, -1e19, 9.5e18, 70000.5, -40000}
	var cs []Case
	k := 0
	for _, mode := range []string{"rni", "rzi", "rmi", "rpi"} {
		for _, d := range []string{"s32", "u32", "s64", "u64", "s16"} {
			for _, a := range []string{"f32", "f64"} {
				for j := 0; j < 2; j++ {
					x := vals[k%len(vals)]
					k++
					in := b64(x)
					if a == "f32" {
						x = float64(float32(x))
						in = b32(float32(x))
					}
					w := width(d)
					var want uint64
					isa := isaFltInt
					if math.IsNaN(x) {
						isa = isaNaNInt
						if a == "f64" || w == 64 {
							want = 1 << (w - 1)
						}
					} else {
						r := x
						switch mode {
						case "rni":
							r = math.RoundToEven(x)
						case "rzi":
							r = math.Trunc(x)
						case "rmi":
							r = math.Floor(x)
						case "rpi":
							r = math.Ceil(x)
						}
						lo, hi := 0.0, math.Ldexp(1, w)-1
						if signed(d) {
							lo, hi = -math.Ldexp(1, w-1), math.Ldexp(1, w-1)-1
						}
						minBits, maxBits := uint64(0), mask(w)
						if signed(d) {
							minBits, maxBits = 1<<(w-1), mask(w-1)
						}
						switch {
						case r <= lo:
							want = minBits
						case r >= hi:
							want = maxBits
						case r < 0:
							want = uint64(int64(r))
						default:
							want = uint64(r)
						}
					}
					dreg := "b32"
					if w == 64 {
						dreg = "b64"
					}
					want = extend(want, w, signed(d)) & mask(8*Bytes(dreg))
					cs = append(cs, ins("cvt", fmt.Sprintf("%s.%s.%s %v", mode, d, a, x), isa,
						fmt.Sprintf("cvt.%s.%s.%s %%d, %%a", mode, d, a), dreg, []string{a}, []uint64{in}, want))
				}
			}
		}
	}
	return cs
}

func cvtIntFloat() []Case {
	var cs []Case
	for _, mode := range []string{"rn", "rz", "rm", "rp"} {
		for _, c := range []struct {
			d, a string
			v    int64
			u    uint64
		}{
			{"f32", "s32", 16777217, 0}, {"f32", "s32", -16777219, 0}, {"f32", "u32", 0, 0xffffffff},
			{"f64", "s64", 1<<53 + 1, 0}, {"f64", "u64", 0, 0xffffffffffffffff}, {"f32", "s64", -(1<<40 + 3), 0},
		} {
			r := big.NewRat(c.v, 1)
			in := uint64(c.v)
			if c.a[0] == 'u' {
				r = new(big.Rat).SetInt(new(big.Int).SetUint64(c.u))
				in = c.u
			}
			f := fmt32
			if c.d == "f64" {
				f = fmt64
			}
			in &= mask(width(c.a))
			cs = append(cs, ins("cvt", fmt.Sprintf("%s.%s.%s %v", mode, c.d, c.a, r.RatString()), isaFrnd,
				fmt.Sprintf("cvt.%s.%s.%s %%d, %%a", mode, c.d, c.a), c.d, []string{c.a}, []uint64{in}, roundRat(r, f, mode, false)))
		}
	}
	return cs
}

func cvtFloatFloat() []Case {
	var cs []Case
	vals := []float64{1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-52, -(1 + 0x1p-24 + 0x1p-52), 1e39, -1e39, 1e-46, -1e-46, 3e-40, 0x1p-150, 3 * 0x1p-151, 0x1.fffffffp127}
	for i, mode := range []string{"rn", "rz", "rm", "rp"} {
		for j, x := range vals {
			if (i+j)%2 == 1 && j > 2 {
				continue
			}
			cs = append(cs, ins("cvt", fmt.Sprintf("%s.f32.f64 %v", mode, x), isaFrnd,
				fmt.Sprintf("cvt.%s.f32.f64 %%d, %%a", mode), "f32", []string{"f64"}, []uint64{b64(x)}, roundRat(ratOf(x), fmt32, mode, false)))
		}
	}
	cs = append(cs,
		ins("cvt", "rn.f32.f64 +Inf", isaFrnd, "cvt.rn.f32.f64 %d, %a", "f32", []string{"f64"}, []uint64{inf64}, inf32),
		ins("cvt", "rz.f32.f64 -Inf", isaFrnd, "cvt.rz.f32.f64 %d, %a", "f32", []string{"f64"}, []uint64{ninf64}, ninf32),
		open(ins("cvt", "rn.f32.f64 NaN", isaNaNOpen, "cvt.rn.f32.f64 %d, %a", "f32", []string{"f64"}, []uint64{0x7ff4000000000001}, nan32)),
		ins("cvt", "rn.ftz.f32.f64 subnormal result", isaCvtFtz, "cvt.rn.ftz.f32.f64 %d, %a", "f32", []string{"f64"}, []uint64{b64(-3e-40)}, neg32),
		ins("cvt", "f64.f32 subnormal", isaCvtExact, "cvt.f64.f32 %d, %a", "f64", []string{"f32"}, []uint64{1}, b64(0x1p-149)),
		ins("cvt", "ftz.f64.f32 subnormal", isaCvtFtz, "cvt.ftz.f64.f32 %d, %a", "f64", []string{"f32"}, []uint64{0x80000001}, neg64),
		ins("cvt", "f64.f32 -Inf", isaCvtExact, "cvt.f64.f32 %d, %a", "f64", []string{"f32"}, []uint64{ninf32}, ninf64),
		ins("cvt", "rni.f32.f32 2.5", isaRndInt, "cvt.rni.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(2.5)}, b32(2)),
		ins("cvt", "rni.f32.f32 -0.5", isaRndInt, "cvt.rni.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(-0.5)}, neg32),
		ins("cvt", "rpi.f32.f32 -0.5", isaRndInt, "cvt.rpi.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(-0.5)}, neg32),
		ins("cvt", "rmi.f32.f32 -0.5", isaRndInt, "cvt.rmi.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(-0.5)}, b32(-1)),
		ins("cvt", "rmi.f32.f32 0.5", isaRndInt, "cvt.rmi.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(0.5)}, 0),
		ins("cvt", "rzi.f32.f32 -1.5", isaRndInt, "cvt.rzi.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(-1.5)}, b32(-1)),
		ins("cvt", "rpi.f32.f32 1e30", isaRndInt, "cvt.rpi.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(1e30)}, b32(1e30)),
		ins("cvt", "rni.f64.f64 2^52-0.5", isaRndInt, "cvt.rni.f64.f64 %d, %a", "f64", []string{"f64"}, []uint64{b64(0x1p52 - 0.5)}, b64(0x1p52)),
		ins("cvt", "rzi.f64.f64 -Inf", isaRndInt, "cvt.rzi.f64.f64 %d, %a", "f64", []string{"f64"}, []uint64{ninf64}, ninf64),
		open(ins("cvt", "rni.f32.f32 NaN", isaNaNOpen, "cvt.rni.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{0x7fc00001}, nan32)),
		ins("cvt", "rni.ftz.f32.f32 subnormal", isaCvtFtz, "cvt.rni.ftz.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{0x80000005}, neg32),
		ins("cvt", "sat.f32.f32 1.5", isaCvtSat, "cvt.sat.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(1.5)}, b32(1)),
		ins("cvt", "sat.f32.f32 -0.5", isaCvtSat, "cvt.sat.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{b32(-0.5)}, 0),
		ins("cvt", "sat.f32.f32 NaN", isaCvtSat, "cvt.sat.f32.f32 %d, %a", "f32", []string{"f32"}, []uint64{nan32}, 0),
		ins("cvt", "rn.sat.f32.f64 0.75", isaCvtSat, "cvt.rn.sat.f32.f64 %d, %a", "f32", []string{"f64"}, []uint64{b64(0.75)}, b32(0.75)),
		ins("cvt", "rn.sat.f64.s32 -3", isaCvtSat, "cvt.rn.sat.f64.s32 %d, %a", "f64", []string{"s32"}, []uint64{uint64(uint32(0xfffffffd))}, 0),
	)
	return cs
}

func cvtHalf() []Case {
	h := func(name, insn, d, a string, in uint64, x *big.Rat, f format, mode string) Case {
		return ins("cvt", name, isaFrnd, insn, d, []string{a}, []uint64{in}, roundRat(x, f, mode, false))
	}
	r32 := func(x float32) *big.Rat { return ratOf(float64(x)) }
	return []Case{
		h("rn.f16.f32 65520", "cvt.rn.f16.f32 %d, %a", "f16", "f32", b32(65520), r32(65520), fmt16, "rn"),
		h("rn.f16.f32 65519", "cvt.rn.f16.f32 %d, %a", "f16", "f32", b32(65519), r32(65519), fmt16, "rn"),
		h("rz.f16.f32 1e6", "cvt.rz.f16.f32 %d, %a", "f16", "f32", b32(1e6), r32(1e6), fmt16, "rz"),
		h("rm.f16.f32 1e6", "cvt.rm.f16.f32 %d, %a", "f16", "f32", b32(-1e6), r32(-1e6), fmt16, "rm"),
		h("rn.f16.f32 2^-25", "cvt.rn.f16.f32 %d, %a", "f16", "f32", b32(0x1p-25), r32(0x1p-25), fmt16, "rn"),
		h("rn.f16.f32 3*2^-26", "cvt.rn.f16.f32 %d, %a", "f16", "f32", b32(3*0x1p-26), r32(3*0x1p-26), fmt16, "rn"),
		h("rm.f16.f32 -1e-10", "cvt.rm.f16.f32 %d, %a", "f16", "f32", b32(-1e-10), r32(-1e-10), fmt16, "rm"),
		h("rp.f16.f32 1e-10", "cvt.rp.f16.f32 %d, %a", "f16", "f32", b32(1e-10), r32(1e-10), fmt16, "rp"),
		h("rn.f16.f64 1/3", "cvt.rn.f16.f64 %d, %a", "f16", "f64", b64(1.0/3), ratOf(1.0/3), fmt16, "rn"),
		h("rn.f16.s32 2049", "cvt.rn.f16.s32 %d, %a", "f16", "s32", 2049, big.NewRat(2049, 1), fmt16, "rn"),
		h("rp.f16.u32 2049", "cvt.rp.f16.u32 %d, %a", "f16", "u32", 2049, big.NewRat(2049, 1), fmt16, "rp"),
		h("rn.bf16.f32 tie down", "cvt.rn.bf16.f32 %d, %a", "bf16", "f32", 0x3f808000, r32(f32(0x3f808000)), fmtBF, "rn"),
		h("rn.bf16.f32 tie up", "cvt.rn.bf16.f32 %d, %a", "bf16", "f32", 0x3f818000, r32(f32(0x3f818000)), fmtBF, "rn"),
		h("rn.bf16.f32 above tie", "cvt.rn.bf16.f32 %d, %a", "bf16", "f32", 0x3f808001, r32(f32(0x3f808001)), fmtBF, "rn"),
		h("rz.bf16.f32", "cvt.rz.bf16.f32 %d, %a", "bf16", "f32", 0xbf80ffff, r32(f32(0xbf80ffff)), fmtBF, "rz"),
		h("rn.bf16.f32 overflow", "cvt.rn.bf16.f32 %d, %a", "bf16", "f32", 0x7f7fffff, r32(f32(0x7f7fffff)), fmtBF, "rn"),
		ins("cvt", "f32.f16 subnormal", isaCvtExact, "cvt.f32.f16 %d, %a", "f32", []string{"f16"}, []uint64{0x8001}, b32(-0x1p-24)),
		ins("cvt", "f32.f16 Inf", isaCvtExact, "cvt.f32.f16 %d, %a", "f32", []string{"f16"}, []uint64{0x7c00}, inf32),
		ins("cvt", "f64.f16 65504", isaCvtExact, "cvt.f64.f16 %d, %a", "f64", []string{"f16"}, []uint64{0x7bff}, b64(65504)),
		ins("cvt", "f32.bf16 1", isaCvtExact, "cvt.f32.bf16 %d, %a", "f32", []string{"bf16"}, []uint64{0x3f80}, 0x3f800000),
		ins("cvt", "rni.s32.f16 2.5", isaFltInt, "cvt.rni.s32.f16 %d, %a", "s32", []string{"f16"}, []uint64{0x4100}, 2),
		ins("cvt", "rzi.u8.f16 -2.5", isaFltInt, "cvt.rzi.u8.f16 %d, %a", "b32", []string{"f16"}, []uint64{0xc100}, 0),
		ins("cvt", "rn.relu.f16.f32 -1", isaRelu, "cvt.rn.relu.f16.f32 %d, %a", "f16", []string{"f32"}, []uint64{b32(-1)}, 0),
		ins("cvt", "rn.relu.bf16.f32 3", isaRelu, "cvt.rn.relu.bf16.f32 %d, %a", "bf16", []string{"f32"}, []uint64{b32(3)}, 0x4040),
	}
}
