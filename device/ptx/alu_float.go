package ptx

import (
	"fmt"
	"math"
)

// f32of, bitsOf32, f64of and bitsOf64 are the bit conversions every
// floating-point lane function makes. They are //go:nocheckptr as well as
// //go:norace: under -race the compiler checks each unsafe.Pointer
// conversion of math.Float32frombits and its kin inlined into them, and
// those checks took a third of the interpreter's time (a race build of the
// tiled backprojection).
//
//go:norace
//go:nocheckptr
func f32of(v uint64) float32 { return math.Float32frombits(uint32(v)) }

//go:norace
//go:nocheckptr
func bitsOf32(f float32) uint64 {
	if f != f {
		return canonNaN32
	}
	return uint64(math.Float32bits(f))
}

//go:norace
//go:nocheckptr
func f64of(v uint64) float64 { return math.Float64frombits(v) }

//go:norace
//go:nocheckptr
func bitsOf64(f float64) uint64 {
	if f != f {
		return canonNaN64
	}
	return math.Float64bits(f)
}

// flush32 flushes an f32 subnormal to a zero of its sign (.ftz).
//
//go:norace
func flush32(f float32) float32 {
	if f != 0 && math.Abs(float64(f)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(f)))
	}
	return f
}

// saturate is .sat: the result clamped to [+0.0, 1.0], NaN to +0.0 (the
// ISA: ".sat limits the result to the range [0.0, 1.0]. NaN results are
// flushed to +0.0f"). -0.0 becomes +0.0: the range's lower end is +0.0,
// as CUDA's __saturatef says ("Clamp the input argument to [+0.0, 1.0]"),
// a reading the ISA leaves open and a GPU run's ISA suite logs.
//
//go:norace
func saturate[F float32 | float64](f F) F {
	switch {
	case f != f:
		return 0
	case f <= 0:
		return 0
	case f > 1:
		return 1
	}
	return f
}

// byArity makes h, a lane function of three operands, one of n operands
// (the others 0).
//
//go:norace
func byArity(n int, h func(a, b, c uint64) uint64) aluFns {
	var fn aluFns
	switch n {
	case 1:
		fn.f1 = func(a uint64) uint64 { return h(a, 0, 0) }
	case 2:
		fn.f2 = func(a, b uint64) uint64 { return h(a, b, 0) }
	default:
		fn.f3 = h
	}
	return fn
}

// wrap32 wraps an f32 lane function with .ftz and .sat.
//
//go:norace
func wrap32(m mods, n int, g func(a, b, c float32) float32) aluFns {
	ftz, sat := m.ftz, m.sat
	h := func(a, b, c uint64) uint64 {
		x, y, z := f32of(a), f32of(b), f32of(c)
		if ftz {
			x, y, z = flush32(x), flush32(y), flush32(z)
		}
		r := g(x, y, z)
		if ftz {
			r = flush32(r)
		}
		if sat {
			r = saturate(r)
		}
		return bitsOf32(r)
	}
	return byArity(n, h)
}

//go:norace
func wrap64(m mods, n int, g func(a, b, c float64) float64) aluFns {
	sat := m.sat
	h := func(a, b, c uint64) uint64 {
		r := g(f64of(a), f64of(b), f64of(c))
		if sat {
			r = saturate(r)
		}
		return bitsOf64(r)
	}
	return byArity(n, h)
}

// floatFunc returns a floating-point ALU instruction's lane function.
//
//go:norace
func floatFunc(base string, m mods, t typ) (fn aluFns, n int, ok bool, err error) {
	if t != tF32 && t != tF64 {
		return halfFunc(base, m, t)
	}
	mode := m.rnd
	if mode == rnDefault {
		mode = rnNear
	}
	is32 := t == tF32
	// bit operations: abs and neg act on the sign bit (NaNs included)
	switch base {
	case "abs", "neg":
		neg := base == "neg"
		if is32 {
			ftz := m.ftz
			fn.f1 = func(a uint64) uint64 {
				if ftz {
					a = uint64(math.Float32bits(flush32(f32of(a))))
				}
				if neg {
					return uint64(uint32(a) ^ 1<<31)
				}
				return uint64(uint32(a) &^ (1 << 31))
			}
		} else if neg {
			fn.f1 = func(a uint64) uint64 { return a ^ 1<<63 }
		} else {
			// "For abs.f64, NaN input is passed through unchanged."
			fn.f1 = func(a uint64) uint64 {
				if a&^(1<<63) > 0x7ff0000000000000 {
					return a
				}
				return a &^ (1 << 63)
			}
		}
		return fn, 1, true, nil
	case "copysign":
		if is32 {
			fn.f2 = func(a, b uint64) uint64 { return uint64(uint32(b)&^(1<<31) | uint32(a)&(1<<31)) }
		} else {
			fn.f2 = func(a, b uint64) uint64 { return b&^(1<<63) | a&(1<<63) }
		}
		return fn, 2, true, nil
	case "testp":
		var test func(f float64, sub bool) bool
		switch {
		case m.other["finite"]:
			test = func(f float64, _ bool) bool { return !math.IsInf(f, 0) && f == f }
		case m.other["infinite"]:
			test = func(f float64, _ bool) bool { return math.IsInf(f, 0) }
		case m.other["number"]:
			test = func(f float64, _ bool) bool { return f == f }
		case m.other["notanumber"]:
			test = func(f float64, _ bool) bool { return f != f }
		case m.other["normal"]:
			// "As a special case, positive and negative zero are
			// considered normal numbers."
			test = func(f float64, sub bool) bool { return f == f && !math.IsInf(f, 0) && !sub }
		case m.other["subnormal"]:
			test = func(f float64, sub bool) bool { return sub }
		default:
			return fn, 0, true, fmt.Errorf("testp needs a test")
		}
		fn.f1 = func(a uint64) uint64 {
			var f float64
			var sub bool
			if is32 {
				x := f32of(a)
				f, sub = float64(x), x != 0 && math.Abs(float64(x)) < 0x1p-126
			} else {
				f = f64of(a)
				sub = f != 0 && math.Abs(f) < 0x1p-1022
			}
			return b2u(test(f, sub))
		}
		return fn, 1, true, nil
	}
	if fn, ok := fastRN(base, m, is32, mode); ok {
		return fn, 2, true, nil
	}
	if is32 {
		var g func(a, b, c float32) float32
		n := 2
		switch base {
		case "add":
			g = func(a, b, _ float32) float32 { return f32add(a, b, mode) }
		case "sub":
			g = func(a, b, _ float32) float32 { return f32add(a, -b, mode) }
		case "mul":
			g = func(a, b, _ float32) float32 { return f32mul(a, b, mode) }
		case "fma", "mad":
			if base == "mad" && m.rnd == rnDefault {
				return fn, 0, true, fmt.Errorf("mad.f32 without a rounding mode is not supported")
			}
			n = 3
			g = func(a, b, c float32) float32 { return f32fma(a, b, c, mode) }
		case "div":
			switch {
			case m.approx:
				g = divApprox32
			case m.full:
				// div.full: max error 2 ulp across the full range; computed
				// as the correctly rounded quotient.
				g = func(a, b, _ float32) float32 { return float32(float64(a) / float64(b)) }
			case m.rnd != rnDefault:
				g = func(a, b, _ float32) float32 { return f32div(a, b, mode) }
			default:
				return fn, 0, true, fmt.Errorf("div.f32 needs .approx, .full or a rounding mode")
			}
		case "min", "max":
			isMax := base == "max"
			nan := m.other["NaN"]
			g = func(a, b, _ float32) float32 { return float32(minmax(float64(a), float64(b), isMax, nan)) }
		case "rcp":
			n = 1
			if m.approx {
				g = func(a, _, _ float32) float32 { return float32(1 / float64(a)) }
			} else {
				g = func(a, _, _ float32) float32 { return f32div(1, a, mode) }
			}
		case "sqrt":
			n = 1
			if m.approx {
				g = func(a, _, _ float32) float32 { return float32(math.Sqrt(float64(a))) }
			} else {
				g = func(a, _, _ float32) float32 { return f32sqrt(a, mode) }
			}
		case "rsqrt":
			n = 1
			g = func(a, _, _ float32) float32 { return float32(1 / math.Sqrt(float64(a))) }
		case "ex2":
			n = 1
			g = func(a, _, _ float32) float32 { return float32(math.Exp2(float64(a))) }
		case "lg2":
			n = 1
			g = func(a, _, _ float32) float32 { return float32(math.Log2(float64(a))) }
		case "sin":
			n = 1
			g = func(a, _, _ float32) float32 { return float32(math.Sin(float64(a))) }
		case "cos":
			n = 1
			g = func(a, _, _ float32) float32 { return float32(math.Cos(float64(a))) }
		case "tanh":
			n = 1
			g = func(a, _, _ float32) float32 { return float32(math.Tanh(float64(a))) }
		default:
			return fn, 0, false, nil
		}
		return wrap32(m, n, g), n, true, nil
	}
	var g func(a, b, c float64) float64
	n = 2
	switch base {
	case "add":
		g = func(a, b, _ float64) float64 { return f64add(a, b, mode) }
	case "sub":
		g = func(a, b, _ float64) float64 { return f64add(a, -b, mode) }
	case "mul":
		g = func(a, b, _ float64) float64 { return f64mul(a, b, mode) }
	case "fma", "mad":
		n = 3
		g = func(a, b, c float64) float64 { return f64fma(a, b, c, mode) }
	case "div":
		g = func(a, b, _ float64) float64 { return f64div(a, b, mode) }
	case "min", "max":
		isMax := base == "max"
		nan := m.other["NaN"]
		g = func(a, b, _ float64) float64 { return minmax(a, b, isMax, nan) }
	case "rcp":
		n = 1
		if m.approx && m.ftz {
			fn.f1 = rcpApproxFtz64
			return fn, 1, true, nil
		}
		g = func(a, _, _ float64) float64 { return f64div(1, a, mode) }
	case "sqrt":
		n = 1
		g = func(a, _, _ float64) float64 { return f64sqrt(a, mode) }
	case "rsqrt":
		n = 1
		if m.approx && m.ftz {
			fn.f1 = rsqrtApproxFtz64
			return fn, 1, true, nil
		}
		g = func(a, _, _ float64) float64 { return 1 / math.Sqrt(a) }
	default:
		return fn, 0, false, nil
	}
	return wrap64(m, n, g), n, true, nil
}

// minmax is PTX's min and max: a NaN operand gives the other operand
// (.NaN: a NaN result), -0 is less than +0.
//
//go:norace
func minmax(a, b float64, isMax, nanProp bool) float64 {
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return math.NaN()
	case an || bn:
		if nanProp {
			return math.NaN()
		}
		if an {
			return b
		}
		return a
	}
	if a == b && a == 0 {
		if isMax == math.Signbit(a) {
			return b
		}
		return a
	}
	if (a > b) == isMax {
		return a
	}
	return b
}

// floatCmp returns setp's comparison of floats.
//
//go:norace
func floatCmp(cmp string, t typ, ftz bool) (func(a, b uint64) bool, error) {
	get := func(v uint64) float64 {
		if t == tF32 {
			f := f32of(v)
			if ftz {
				f = flush32(f)
			}
			return float64(f)
		}
		return f64of(v)
	}
	return compareBy(cmp, get)
}

// compareBy returns the float comparison cmp (eq, ne, lt, le, gt, ge,
// those with u, num, nan) of two values that get reads.
//
//go:norace
func compareBy[T uint16 | uint64](cmp string, get func(T) float64) (func(a, b T) bool, error) {
	var c func(x, y float64) bool
	unordered := false
	base := cmp
	if len(cmp) == 3 && cmp[2] == 'u' {
		unordered, base = true, cmp[:2]
	}
	switch base {
	case "eq":
		c = func(x, y float64) bool { return x == y }
	case "ne":
		c = func(x, y float64) bool { return x != y }
	case "lt":
		c = func(x, y float64) bool { return x < y }
	case "le":
		c = func(x, y float64) bool { return x <= y }
	case "gt":
		c = func(x, y float64) bool { return x > y }
	case "ge":
		c = func(x, y float64) bool { return x >= y }
	case "num":
		c = func(x, y float64) bool { return true }
	case "nan":
		c, unordered = func(x, y float64) bool { return false }, true
	default:
		return nil, fmt.Errorf("comparison .%s of floats", cmp)
	}
	return func(a, b T) bool {
		x, y := get(a), get(b)
		if x != x || y != y {
			return unordered
		}
		return c(x, y)
	}, nil
}

// fastRN is add, sub and mul to nearest without .ftz or .sat: Go's own
// float32 and float64 operations, which round to nearest even, once.
//
//go:norace
func fastRN(base string, m mods, is32 bool, mode uint8) (aluFns, bool) {
	var fn aluFns
	if mode != rnNear || m.ftz || m.sat {
		return fn, false
	}
	switch {
	case is32 && base == "add":
		fn.f2 = func(a, b uint64) uint64 { return bitsOf32(f32of(a) + f32of(b)) }
	case is32 && base == "sub":
		fn.f2 = func(a, b uint64) uint64 { return bitsOf32(f32of(a) - f32of(b)) }
	case is32 && base == "mul":
		fn.f2 = func(a, b uint64) uint64 { return bitsOf32(f32of(a) * f32of(b)) }
	case !is32 && base == "add":
		fn.f2 = func(a, b uint64) uint64 { return bitsOf64(f64of(a) + f64of(b)) }
	case !is32 && base == "sub":
		fn.f2 = func(a, b uint64) uint64 { return bitsOf64(f64of(a) - f64of(b)) }
	case !is32 && base == "mul":
		fn.f2 = func(a, b uint64) uint64 { return bitsOf64(f64of(a) * f64of(b)) }
	default:
		return fn, false
	}
	return fn, true
}

// divApprox32 is div.approx.f32, "computed as d = a * (1/b)": where the
// ISA bounds its error (|b| in [2^-126, 2^126], 2 ulp) the correctly
// rounded quotient; for 2^126 < |b| < 2^128, where 1/b is subnormal and
// flushed, a * (±0): "if a is infinity, div.approx.f32 returns NaN,
// otherwise it returns a sign-preserving zero" (a NaN a gives NaN).
//
//go:norace
func divApprox32(a, b, _ float32) float32 {
	if B := math.Abs(float64(b)); B > 0x1p126 && B <= math.MaxFloat32 {
		return float32(float64(a) * math.Copysign(0, float64(b)))
	}
	return float32(float64(a) / float64(b))
}

// canonNaNApprox64 is the NaN of rcp.approx.ftz.f64 and
// rsqrt.approx.ftz.f64: "Input NaNs map to a canonical NaN with encoding
// 0x7fffffff00000000".
const canonNaNApprox64 = 0x7fffffff00000000

// round21 rounds a positive or negative normal float64 to nearest even in
// the 1.11.20 format (its upper word), the low word zero.
//
//go:norace
func round21(r float64) uint64 {
	u := math.Float64bits(r)
	lo := u & 0xffffffff
	u &^= 0xffffffff
	if lo > 0x80000000 || lo == 0x80000000 && u&(1<<32) != 0 {
		u += 1 << 32 // a carry out of the mantissa steps the exponent
	}
	return u
}

// rcpApproxFtz64 is rcp.approx.ftz.f64: the reciprocal of the upper word
// of a (1.11.20 format; the low word is ignored), in the upper word of d,
// the low word zero. The ISA names the bits computed, not their rounding:
// the interpreter rounds the exact reciprocal to nearest even in 1.11.20
// (1/tmp in float64 is correctly rounded, and no reciprocal of a 21-bit
// value lies within 2^-53 of a 1.11.20 midpoint, so rounding it again is
// exact). Subnormal inputs and results flush to zeros of their sign, NaNs
// give 0x7fffffff00000000.
//
//go:norace
func rcpApproxFtz64(a uint64) uint64 {
	hi := a &^ 0xffffffff
	sign := hi & (1 << 63)
	switch mag := hi &^ (1 << 63); {
	case mag > 0x7ff0000000000000:
		return canonNaNApprox64
	case mag < 0x0010000000000000: // ±0 and subnormals: ±Inf
		return sign | 0x7ff0000000000000
	case mag > 0x7fd0000000000000: // 1/tmp below 2^-1022 (Inf included): ±0
		return sign
	}
	return round21(1 / math.Float64frombits(hi))
}

// rsqrtApproxFtz64 is rsqrt.approx.ftz.f64: 1/sqrt of the upper word of a
// in the upper word of d, the low word zero, rounded to nearest even in
// 1.11.20 as rcp.approx.ftz.f64 is. 1/math.Sqrt(tmp) is within 2 float64
// ulps of the exact value, and over every 21-bit mantissa and both
// exponent parities the exact value lies at least 1475 ulps from a
// 1.11.20 midpoint (TestISARsqrtApproxExhaustive), so rounding it is
// exact. Negative inputs (-Inf, negative normals) give NaN, -0 and
// negative subnormals -Inf.
//
//go:norace
func rsqrtApproxFtz64(a uint64) uint64 {
	hi := a &^ 0xffffffff
	sign := hi & (1 << 63)
	mag := hi &^ (1 << 63)
	switch {
	case mag > 0x7ff0000000000000:
		return canonNaNApprox64
	case mag < 0x0010000000000000:
		return sign | 0x7ff0000000000000
	case sign != 0:
		return canonNaNApprox64
	case mag == 0x7ff0000000000000:
		return 0
	}
	return round21(1 / math.Sqrt(math.Float64frombits(hi)))
}
