package ptx

import (
	"math"
	"math/big"
)

// Exact rounding. An f32 operation is computed in float64 together with
// the sign of its error (the exact result is x plus a quantity smaller
// than half an f64 ulp, of sign e), which is enough to round the exact
// result to f32 in any mode: error-free transformations give the sign
// (TwoSum for sums, the remainder by FMA for quotients and roots;
// products of f32 values are exact in f64).

const canonNaN32 = 0x7fffffff
const canonNaN64 = 0x7fffffffffffffff

//go:norace
func nextUp32(f float32) float32 { return math.Nextafter32(f, float32(math.Inf(1))) }

//go:norace
func nextDown32(f float32) float32 { return math.Nextafter32(f, float32(math.Inf(-1))) }

//go:norace
func sgn(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// roundF32 rounds x + (tiny of sign e) to f32 in mode.
//
//go:norace
func roundF32(x float64, e int, mode uint8) float32 {
	f := float32(x)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return f
	}
	fx := float64(f)
	switch mode {
	case rnZero:
		if fx == x {
			if e != 0 && e != sgn(x) && x != 0 {
				return math.Nextafter32(f, 0)
			}
			return f
		}
		if math.Abs(fx) > math.Abs(x) {
			return math.Nextafter32(f, 0)
		}
		return f
	case rnDown:
		if fx == x {
			if e < 0 {
				return nextDown32(f)
			}
			return f
		}
		if fx > x {
			return nextDown32(f)
		}
		return f
	case rnUp:
		if fx == x {
			if e > 0 {
				return nextUp32(f)
			}
			return f
		}
		if fx < x {
			return nextUp32(f)
		}
		return f
	}
	if e == 0 || fx == x {
		return f
	}
	if f > math.MaxFloat32 || f < -math.MaxFloat32 {
		// x is at or past the midpoint of MaxFloat32 and 2^128: on it, an
		// exact result below it in magnitude is MaxFloat32
		if math.Abs(x) == 0x1.ffffffp127 && e != sgn(x) {
			return float32(math.Copysign(math.MaxFloat32, x))
		}
		return f
	}
	var o float32
	if fx < x {
		o = nextUp32(f)
	} else {
		o = nextDown32(f)
	}
	if math.IsInf(float64(o), 0) {
		return f
	}
	if float64(o)-x == x-fx || x-float64(o) == fx-x { // a tie: the error decides
		lo, hi := min(f, o), max(f, o)
		if e > 0 {
			return hi
		}
		return lo
	}
	return f
}

// twoSumErr returns the exact error of s = a + b.
//
//go:norace
func twoSumErr(a, b, s float64) float64 {
	bb := s - a
	return (a - (s - bb)) + (b - bb)
}

// finite reports whether every x is neither infinite nor NaN. It compares
// rather than calling math.IsInf, whose bit conversions are checked under
// -race (checkptr) on every call.
//
//go:norace
func finite(xs ...float64) bool {
	for _, x := range xs {
		if x != x || x > math.MaxFloat64 || x < -math.MaxFloat64 {
			return false
		}
	}
	return true
}

// Exact f32 operations in a rounding mode.

//go:norace
func f32add(a, b float32, mode uint8) float32 {
	A, B := float64(a), float64(b)
	s := A + B
	e := 0
	if finite(A, B, s) {
		e = sgn(twoSumErr(A, B, s))
	}
	if s == 0 && e == 0 && mode == rnDown && (math.Signbit(A) || math.Signbit(B)) {
		return float32(math.Copysign(0, -1))
	}
	return roundF32(s, e, mode)
}

//go:norace
func f32mul(a, b float32, mode uint8) float32 { return roundF32(float64(a)*float64(b), 0, mode) }

//go:norace
func f32fma(a, b, c float32, mode uint8) float32 {
	p := float64(a) * float64(b)
	C := float64(c)
	s := p + C
	e := 0
	if finite(p, C, s) {
		e = sgn(twoSumErr(p, C, s))
	}
	if s == 0 && e == 0 {
		if mode == rnDown {
			if math.Signbit(p) || math.Signbit(C) {
				return float32(math.Copysign(0, -1))
			}
		} else if math.Signbit(p) && math.Signbit(C) {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}
	return roundF32(s, e, mode)
}

//go:norace
func f32div(a, b float32, mode uint8) float32 {
	A, B := float64(a), float64(b)
	q := A / B
	e := 0
	if finite(A, B, q) && q != 0 {
		e = sgn(math.FMA(-q, B, A)) * sgn(B)
	}
	return roundF32(q, e, mode)
}

//go:norace
func f32sqrt(a float32, mode uint8) float32 {
	A := float64(a)
	q := math.Sqrt(A)
	e := 0
	if finite(q) && q > 0 {
		e = sgn(math.FMA(-q, q, A))
	}
	return roundF32(q, e, mode)
}

// adjust64 rounds the exact result s + (tiny of sign e) of an f64
// operation, s rounded to nearest, in a directed mode.
//
//go:norace
func adjust64(s float64, e int, mode uint8) float64 {
	if e == 0 || math.IsNaN(s) {
		return s
	}
	switch mode {
	case rnZero:
		if e != sgn(s) {
			return math.Nextafter(s, 0)
		}
	case rnDown:
		if e < 0 {
			return math.Nextafter(s, math.Inf(-1))
		}
	case rnUp:
		if e > 0 {
			return math.Nextafter(s, math.Inf(1))
		}
	}
	return s
}

// overflow64 returns what a directed mode gives where round to nearest
// overflowed to s (±Inf) from finite operands.
//
//go:norace
func overflow64(s float64, mode uint8) float64 {
	switch {
	case mode == rnZero, mode == rnDown && s > 0, mode == rnUp && s < 0:
		return math.Copysign(math.MaxFloat64, s)
	}
	return s
}

// overflowed64 is what a directed mode gives where f64 operation a op b
// rounded to nearest is s, NaN or infinite: overflow64's where finite
// operands overflowed (b nonzero: a quotient by zero is exact), else s.
//
//go:norace
func overflowed64(s, a, b float64, mode uint8) float64 {
	if finite(a, b) && b != 0 {
		return overflow64(s, mode)
	}
	return s
}

//go:norace
func f64add(a, b float64, mode uint8) float64 {
	s := a + b
	if mode == rnNear || mode == rnDefault {
		return s
	}
	if !finite(s) {
		return overflowed64(s, a, b, mode)
	}
	if s == 0 && mode == rnDown && (math.Signbit(a) || math.Signbit(b)) {
		return math.Copysign(0, -1)
	}
	return adjust64(s, sgn(twoSumErr(a, b, s)), mode)
}

//go:norace
func f64mul(a, b float64, mode uint8) float64 {
	s := a * b
	if mode == rnNear || mode == rnDefault {
		return s
	}
	if !finite(s) {
		return overflowed64(s, a, b, mode)
	}
	if math.Abs(s) < 0x1p-969 && s != 0 || s == 0 && a != 0 && b != 0 {
		return bigRound(new(big.Float).SetPrec(4000).Mul(bigOf(a), bigOf(b)), mode)
	}
	return adjust64(s, sgn(math.FMA(a, b, -s)), mode)
}

//go:norace
func f64div(a, b float64, mode uint8) float64 {
	q := a / b
	if mode == rnNear || mode == rnDefault {
		return q
	}
	if !finite(q) {
		return overflowed64(q, a, b, mode)
	}
	// The remainder a - q*b below gives the sign of the error when it is
	// exact: a multiple of ulp(q)*ulp(b), about 2^-105 |a|, it is exact
	// unless it falls below the subnormal range. A subnormal quotient has
	// fewer bits than 53, and a tiny dividend a tiny remainder: both are
	// computed exactly.
	if q == 0 || math.Abs(q) < 0x1p-969 || math.Abs(a) < 0x1p-900 {
		if a == 0 {
			return q
		}
		return bigRound(bigQuo(a, b), mode)
	}
	return adjust64(q, sgn(math.FMA(-q, b, a))*sgn(b), mode)
}

// bigQuo returns a/b truncated to 2000 bits, with a sticky bit below them
// when inexact: rounded again to 53 bits or fewer, in any mode, it rounds
// as the exact quotient does.
//
//go:norace
func bigQuo(a, b float64) *big.Float {
	z := new(big.Float).SetPrec(2000).SetMode(big.ToZero).Quo(bigOf(a), bigOf(b))
	if z.Acc() != big.Exact && z.Sign() != 0 && !z.IsInf() {
		s := new(big.Float).SetMantExp(big.NewFloat(float64(z.Sign())), z.MantExp(nil)-2010)
		z.SetPrec(2100).Add(z, s)
	}
	return z
}

//go:norace
func f64sqrt(a float64, mode uint8) float64 {
	q := math.Sqrt(a)
	if mode == rnNear || mode == rnDefault || !finite(q) || q == 0 {
		return q
	}
	if a < 0x1p-900 {
		// The remainder a - q*q, a multiple of ulp(q)^2 (about 2^-104 a),
		// may fall below the subnormal range and round to zero: scale a
		// by 2^200, exactly, and the root back by 2^-100, exactly (the
		// root of a subnormal is normal).
		s := a * 0x1p200
		q = math.Sqrt(s)
		return adjust64(q, sgn(math.FMA(-q, q, s)), mode) * 0x1p-100
	}
	return adjust64(q, sgn(math.FMA(-q, q, a)), mode)
}

//go:norace
func f64fma(a, b, c float64, mode uint8) float64 {
	if mode == rnNear || mode == rnDefault {
		return math.FMA(a, b, c)
	}
	if !finite(a, b, c) {
		return math.FMA(a, b, c)
	}
	s := math.FMA(a, b, c)
	if s == 0 {
		if mode == rnDown && (math.Signbit(a*b) || math.Signbit(c)) && (a*b != 0 || c != 0 || math.Signbit(a*b) || math.Signbit(c)) {
			exact := new(big.Float).SetPrec(4000).Mul(bigOf(a), bigOf(b))
			exact.SetPrec(4000).Add(exact, bigOf(c))
			if exact.Sign() == 0 {
				return math.Copysign(0, -1)
			}
		}
		if math.Signbit(a*b) && math.Signbit(c) {
			return math.Copysign(0, -1)
		}
	}
	z := new(big.Float).SetPrec(4000).Mul(bigOf(a), bigOf(b))
	z.SetPrec(4000).Add(z, bigOf(c))
	if z.Sign() == 0 {
		return s
	}
	return bigRound(z, mode)
}

//go:norace
func bigOf(x float64) *big.Float { return new(big.Float).SetFloat64(x) }

// bigRound rounds an exact (or 2000-bit) value to f64 in mode, subnormal
// results included.
//
//go:norace
func bigRound(z *big.Float, mode uint8) float64 {
	exp := z.MantExp(nil) // z = mant * 2^exp, 0.5 <= |mant| < 1
	prec := uint(53)
	if exp < -1021 {
		// subnormal: fewer bits
		p := 53 - (-1021 - exp)
		if p < 1 {
			// below half the smallest subnormal: rounds to 0 or the smallest
			r := 0.0
			switch {
			case mode == rnUp && z.Sign() > 0:
				r = math.SmallestNonzeroFloat64
			case mode == rnDown && z.Sign() < 0:
				r = -math.SmallestNonzeroFloat64
			}
			if z.Sign() < 0 && r == 0 {
				r = math.Copysign(0, -1)
			}
			return r
		}
		prec = uint(p)
	}
	bm := map[uint8]big.RoundingMode{rnNear: big.ToNearestEven, rnDefault: big.ToNearestEven, rnZero: big.ToZero, rnDown: big.ToNegativeInf, rnUp: big.ToPositiveInf}[mode]
	r := new(big.Float).SetMode(bm).SetPrec(prec).Set(z)
	f, _ := r.Float64()
	if math.IsInf(f, 0) {
		return overflow64(f, mode)
	}
	return f
}
