package isacases

import (
	"fmt"
	"math"
	"math/big"
)

const (
	isaFRnd     = "Rounding modifiers (default is .rn): .rn mantissa LSB rounds to nearest even; .rz mantissa LSB rounds towards zero; .rm mantissa LSB rounds towards negative infinity; .rp mantissa LSB rounds towards positive infinity. (IEEE 754 arithmetic: the exact result, rounded once.)"
	isaFma      = "fma: Performs a fused multiply-add with no loss of precision in the intermediate product and addition: d = a*b+c computed in infinite precision and then rounded."
	isaDivRnd   = "div.rnd.f32 and div.rnd.f64 implement the IEEE 754 compliant division, with the rounding the modifier names."
	isaSqrtRnd  = "sqrt.rnd.f32 and sqrt.rnd.f64 compute sqrt(a) with IEEE 754 compliant rounding."
	isaRcpRnd   = "rcp.rnd.f32 and rcp.rnd.f64 implement a IEEE 754 compliant reciprocal, 1/a, with the rounding the modifier names."
	isaFtz      = ".ftz: flushes subnormal inputs and results to sign-preserving zero (.f32 only)."
	isaFSat     = ".sat: clamps the result to [0.0, 1.0]. NaN results are flushed to +0.0f."
	isaFSatZero = ".sat: clamps the result to [0.0, 1.0]. (Whether -0.0 stays -0.0 the ISA does not say; read as the range's +0.0.)"
	isaZeroSum  = "IEEE 754: an exact sum of zero is +0 in every rounding mode but toward negative infinity, where it is -0."
	isaSpecial  = "IEEE 754 special values: Inf - Inf, 0 * Inf, 0/0 and sqrt of a negative number are invalid operations with a NaN result; x/0 for finite nonzero x is an infinity with the sign of the exact quotient; sqrt(-0) = -0."
	isaFMinMax  = "min/max.f32: If one input is NaN, the result is the other, non-NaN input; if both are NaN, the result is canonical NaN. min.NaN/max.NaN: the result is canonical NaN if either input is NaN."
	isaAbsNeg   = "abs.f32/neg.f32: take the absolute value of a / negate the sign of a. With .ftz, subnormal inputs are flushed to sign-preserving zero."
)

var modes = []string{"rn", "rz", "rm", "rp"}

func ftype(f format) string {
	if f == fmt64 {
		return "f64"
	}
	return "f32"
}

func fbits(x float64, f format) uint64 {
	if f == fmt64 {
		return b64(x)
	}
	return b32(float32(x))
}

func sqrtRat(r *big.Rat) *big.Rat {
	x := new(big.Float).SetPrec(400).SetRat(r)
	x.Sqrt(x)
	q, _ := x.Rat(nil)
	return q
}

func floatCases() []Case {
	var cs []Case
	type op struct {
		name  string
		isa   string
		n     int
		exact func(a []*big.Rat) *big.Rat
	}
	ops := []op{
		{"add", isaFRnd, 2, func(a []*big.Rat) *big.Rat { return new(big.Rat).Add(a[0], a[1]) }},
		{"sub", isaFRnd, 2, func(a []*big.Rat) *big.Rat { return new(big.Rat).Sub(a[0], a[1]) }},
		{"mul", isaFRnd, 2, func(a []*big.Rat) *big.Rat { return new(big.Rat).Mul(a[0], a[1]) }},
		{"fma", isaFma, 3, func(a []*big.Rat) *big.Rat { r := new(big.Rat).Mul(a[0], a[1]); return r.Add(r, a[2]) }},
		{"div", isaDivRnd, 2, func(a []*big.Rat) *big.Rat { return new(big.Rat).Quo(a[0], a[1]) }},
		{"sqrt", isaSqrtRnd, 1, func(a []*big.Rat) *big.Rat { return sqrtRat(a[0]) }},
		{"rcp", isaRcpRnd, 1, func(a []*big.Rat) *big.Rat { return new(big.Rat).Inv(a[0]) }},
	}
	m32, m64 := float64(math.MaxFloat32), math.MaxFloat64
	inputs := map[string]map[format][][]float64{
		"add": {
			fmt32: {{1, 0x1p-24}, {-1, -(0x1p-24 + 0x1p-40)}, {m32, m32 * 0x1p-24}, {0x1p-126, -0x1p-149}, {1, -1}},
			fmt64: {{1, 0x1p-53}, {-m64, -m64}, {0x1p-1022, -0x1p-1074}, {1, -1}},
		},
		"sub": {
			fmt32: {{1, 0x1p-25 + 0x1p-40}, {-m32, m32}, {0x1p-125, 0x1.8p-126}},
			fmt64: {{1, 0x1p-54}, {0x1p-1021, 0x1.8p-1022}, {2, 2}},
		},
		"mul": {
			fmt32: {{0x1p-100, 0x1p-50}, {0x1.8p-75, -0x1p-75}, {m32, 2}, {1 + 0x1p-23, 1 + 0x1p-23}},
			fmt64: {{0x1p-600, 0x1p-475}, {-(1 + 0x1p-52), 1 + 0x1p-52}, {m64, -1.5}},
		},
		"fma": {
			fmt32: {{1 + 0x1p-23, 1 - 0x1p-24, -1}, {m32, 2, -m32}, {0x1p-100, 0x1p-49, -0x1p-149}, {3, 1.0 / 3, -1}},
			fmt64: {{1 + 0x1p-52, 1 + 0x1p-52, -(1 + 0x1p-51)}, {0x1p-1000, 0x1p-74, 0x1p-1074}, {0.1, 10, -1}},
		},
		"div": {
			fmt32: {{1, 3}, {0x1p-126, 3}, {m32, 0.25}, {-1, m32}},
			fmt64: {{1, 3}, {-2, 3}, {0x1p-1022, 7}},
		},
		"sqrt": {
			fmt32: {{2}, {0x1p-149}, {m32}},
			fmt64: {{2}, {0x1p-1073}},
		},
		"rcp": {
			fmt32: {{3}, {m32}, {-0x1p-128}},
			fmt64: {{3}, {m64}, {0x1p-1030}},
		},
	}
	for _, o := range ops {
		for _, f := range []format{fmt32, fmt64} {
			for _, args := range inputs[o.name][f] {
				if f == fmt32 {
					for i := range args {
						args[i] = float64(float32(args[i]))
					}
				}
				rats := make([]*big.Rat, len(args))
				in := make([]uint64, len(args))
				st := make([]string, len(args))
				names := ""
				for i, a := range args {
					rats[i] = ratOf(a)
					in[i] = fbits(a, f)
					st[i] = ftype(f)
					names += fmt.Sprintf(" %v", a)
				}
				operands := "%d, %a"
				if o.n > 1 {
					operands += ", %b"
				}
				if o.n > 2 {
					operands += ", %c"
				}
				for _, m := range modes {
					r := o.exact(rats)
					isa := o.isa
					if r.Sign() == 0 {
						isa = isaZeroSum
					}
					cs = append(cs, ins("float", fmt.Sprintf("%s.%s.%s%s", o.name, m, ftype(f), names), isa,
						fmt.Sprintf("%s.%s.%s %s", o.name, m, ftype(f), operands), ftype(f), st, in, roundRat(r, f, m, m == "rm")))
				}
			}
		}
	}
	f2 := []string{"f32", "f32"}
	f3 := []string{"f32", "f32", "f32"}
	d2 := []string{"f64", "f64"}
	p := func(name, isa, insn string, s []string, in []uint64, want uint64) Case {
		d := s[0]
		return ins("float", name, isa, insn, d, s, in, want)
	}
	cs = append(cs,
		// .ftz
		p("add.rn.ftz.f32 subnormal result", isaFtz, "add.rn.ftz.f32 %d, %a, %b", f2, []uint64{b32(0x1.8p-126), b32(-0x1p-126)}, 0),
		p("add.rn.ftz.f32 -subnormal result", isaFtz, "add.rn.ftz.f32 %d, %a, %b", f2, []uint64{b32(-0x1.8p-126), b32(0x1p-126)}, neg32),
		p("add.rn.ftz.f32 subnormal input", isaFtz, "add.rn.ftz.f32 %d, %a, %b", f2, []uint64{b32(0x1p-126), b32(-0x1p-149)}, b32(0x1p-126)),
		p("mul.rn.ftz.f32 subnormal input", isaFtz, "mul.rn.ftz.f32 %d, %a, %b", f2, []uint64{1, b32(0x1p100)}, 0),
		p("mul.rn.f32 subnormal input", isaFRnd, "mul.rn.f32 %d, %a, %b", f2, []uint64{1, b32(0x1p100)}, b32(0x1p-49)),
		p("mul.rz.ftz.f32 -subnormal input", isaFtz, "mul.rz.ftz.f32 %d, %a, %b", f2, []uint64{0x80000003, b32(0x1p100)}, neg32),
		p("fma.rn.ftz.f32 subnormal result", isaFtz, "fma.rn.ftz.f32 %d, %a, %b, %c", f3, []uint64{b32(0x1p-70), b32(0x1p-70), 0}, 0),
		p("fma.rn.ftz.f32 subnormal addend", isaFtz, "fma.rn.ftz.f32 %d, %a, %b, %c", f3, []uint64{b32(0x1p-63), b32(0x1p-63), 0x00400000}, b32(0x1p-126)),
		p("div.rn.ftz.f32 subnormal dividend", isaFtz, "div.rn.ftz.f32 %d, %a, %b", f2, []uint64{5, b32(0x1p-10)}, 0),
		p("div.rn.f32 subnormal dividend", isaDivRnd, "div.rn.f32 %d, %a, %b", f2, []uint64{5, b32(0x1p-10)}, b32(5*0x1p-139)),
		p("sqrt.rn.ftz.f32 -subnormal", isaFtz, "sqrt.rn.ftz.f32 %d, %a", []string{"f32"}, []uint64{0x80000001}, neg32),
		p("rcp.rn.ftz.f32 subnormal", isaFtz, "rcp.rn.ftz.f32 %d, %a", []string{"f32"}, []uint64{0x00000010}, inf32),
		p("sub.rn.ftz.f32 subnormals", isaFtz, "sub.rn.ftz.f32 %d, %a, %b", f2, []uint64{0x00000005, 0x00000003}, 0),
		// .sat
		p("add.rn.sat.f32 above 1", isaFSat, "add.rn.sat.f32 %d, %a, %b", f2, []uint64{b32(0.75), b32(0.5)}, b32(1)),
		p("add.rn.sat.f32 below 0", isaFSat, "add.rn.sat.f32 %d, %a, %b", f2, []uint64{b32(-1), b32(0.5)}, 0),
		open(p("add.rn.sat.f32 -0", isaFSatZero, "add.rn.sat.f32 %d, %a, %b", f2, []uint64{neg32, neg32}, 0)),
		p("mul.rn.sat.f32 NaN", isaFSat, "mul.rn.sat.f32 %d, %a, %b", f2, []uint64{0, inf32}, 0),
		p("fma.rn.sat.f32 in range", isaFSat, "fma.rn.sat.f32 %d, %a, %b, %c", f3, []uint64{b32(0.5), b32(0.5), b32(0.125)}, b32(0.375)),
		p("sub.rz.sat.f32 +Inf", isaFSat, "sub.rz.sat.f32 %d, %a, %b", f2, []uint64{inf32, b32(1)}, b32(1)),
		// special values
		open(p("add.rn.f32 Inf-Inf", isaSpecial, "add.rn.f32 %d, %a, %b", f2, []uint64{inf32, ninf32}, nan32)),
		open(p("mul.rn.f32 0*Inf", isaSpecial, "mul.rn.f32 %d, %a, %b", f2, []uint64{neg32, inf32}, nan32)),
		open(p("add.rn.f32 NaN payload", isaNaNOpen, "add.rn.f32 %d, %a, %b", f2, []uint64{0xffc00001, b32(1)}, nan32)),
		open(p("fma.rn.f64 NaN payload", isaNaNOpen, "fma.rn.f64 %d, %a, %b, %c", []string{"f64", "f64", "f64"}, []uint64{0x7ff0000000000001, b64(1), b64(1)}, nan64)),
		open(p("div.rn.f32 0/0", isaSpecial, "div.rn.f32 %d, %a, %b", f2, []uint64{0, 0}, nan32)),
		p("div.rn.f32 1/-0", isaSpecial, "div.rn.f32 %d, %a, %b", f2, []uint64{b32(1), neg32}, ninf32),
		p("div.rz.f64 -1/+0", isaSpecial, "div.rz.f64 %d, %a, %b", d2, []uint64{b64(-1), 0}, ninf64),
		p("sqrt.rn.f32 -0", isaSpecial, "sqrt.rn.f32 %d, %a", []string{"f32"}, []uint64{neg32}, neg32),
		open(p("sqrt.rn.f32 -1", isaSpecial, "sqrt.rn.f32 %d, %a", []string{"f32"}, []uint64{b32(-1)}, nan32)),
		p("sqrt.rp.f64 +Inf", isaSpecial, "sqrt.rp.f64 %d, %a", []string{"f64"}, []uint64{inf64}, inf64),
		p("rcp.rn.f64 -0", isaSpecial, "rcp.rn.f64 %d, %a", []string{"f64"}, []uint64{neg64}, ninf64),
		p("rcp.rz.f32 -Inf", isaSpecial, "rcp.rz.f32 %d, %a", []string{"f32"}, []uint64{ninf32}, neg32),
		p("add.rm.f32 -0+-0", isaZeroSum, "add.rm.f32 %d, %a, %b", f2, []uint64{neg32, neg32}, neg32),
		p("add.rn.f32 -0++0", isaZeroSum, "add.rn.f32 %d, %a, %b", f2, []uint64{neg32, 0}, 0),
		p("fma.rn.f32 -0*1+-0", isaZeroSum, "fma.rn.f32 %d, %a, %b, %c", f3, []uint64{neg32, b32(1), neg32}, neg32),
		// min, max, abs, neg
		p("min.f32 NaN,1", isaFMinMax, "min.f32 %d, %a, %b", f2, []uint64{nan32, b32(1)}, b32(1)),
		p("max.f32 -3,NaN", isaFMinMax, "max.f32 %d, %a, %b", f2, []uint64{b32(-3), 0x7fc00000}, b32(-3)),
		open(p("max.f32 NaN,NaN", isaFMinMax, "max.f32 %d, %a, %b", f2, []uint64{0x7fc00001, 0xffc00000}, nan32)),
		open(p("min.NaN.f32 NaN,1", isaFMinMax, "min.NaN.f32 %d, %a, %b", f2, []uint64{0x7fc00001, b32(1)}, nan32)),
		p("min.f64 NaN,-Inf", isaFMinMax, "min.f64 %d, %a, %b", d2, []uint64{nan64, ninf64}, ninf64),
		p("min.ftz.f32 subnormal", isaFtz, "min.ftz.f32 %d, %a, %b", f2, []uint64{0x80000001, b32(1)}, neg32),
		p("abs.f32 -0", isaAbsNeg, "abs.f32 %d, %a", []string{"f32"}, []uint64{neg32}, 0),
		p("abs.ftz.f32 -subnormal", isaAbsNeg, "abs.ftz.f32 %d, %a", []string{"f32"}, []uint64{0x80000007}, 0),
		p("neg.f64 +0", isaAbsNeg, "neg.f64 %d, %a", []string{"f64"}, []uint64{0}, neg64),
		p("neg.ftz.f32 subnormal", isaAbsNeg, "neg.ftz.f32 %d, %a", []string{"f32"}, []uint64{0x00000007}, neg32),
	)
	return cs
}
