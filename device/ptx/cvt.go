package ptx

import (
	"fmt"
	"math"
	"math/big"
)

// cvtFunc returns cvt's lane function: m.types is (destination, source).
//
//go:norace
func cvtFunc(m mods) (fn aluFns, n int, ok bool, err error) {
	if len(m.types) != 2 {
		return fn, 0, true, fmt.Errorf("cvt needs two types")
	}
	dt, st := m.types[0], m.types[1]
	fn.srcT = st
	mode := m.rnd
	ftz, sat := m.ftz, m.sat
	readF := func(v uint64) float64 {
		switch st {
		case tF32:
			f := f32of(v)
			if ftz {
				f = flush32(f)
			}
			return float64(f)
		case tF64:
			return f64of(v)
		case tF16:
			return float64(f16ToF32(uint16(v)))
		case tBF16:
			return float64(math.Float32frombits(uint32(uint16(v)) << 16))
		}
		return 0
	}
	switch {
	case !dt.float() && !st.float(): // integer to integer
		fn.f1 = func(a uint64) uint64 {
			v := st.ext(a)
			if sat {
				return satInt(v, st.signed(), dt)
			}
			return dt.trunc(v)
		}
	case dt.float() && !st.float(): // integer to float
		if mode == rnDefault && !m.intRnd {
			return fn, 0, true, fmt.Errorf("cvt from integer to float needs a rounding mode")
		}
		fn.f1 = func(a uint64) uint64 {
			v := st.ext(a)
			if iv := int64(v); (st.signed() || iv >= 0) && iv < 1<<53 && iv > -(1<<53) && (dt == tF32 || dt == tF64) {
				x := float64(iv) // exact
				if dt == tF32 {
					f := roundF32(x, 0, mode)
					if sat {
						f = sat32(f)
					}
					return bitsOf32(f)
				}
				if sat {
					x = sat64(x)
				}
				return bitsOf64(x)
			}
			z := new(big.Float)
			if st.signed() {
				z.SetInt64(int64(v))
			} else {
				z.SetUint64(v)
			}
			switch dt {
			case tF32:
				x, _ := z.Float64() // exact for |v| < 2^53; else rounded to nearest: fix below
				f := roundF32(x, bigErrSign(z, x), mode)
				if sat {
					f = sat32(f)
				}
				return bitsOf32(f)
			case tF64:
				x := bigRound(z, mode)
				if sat {
					x = sat64(x)
				}
				return bitsOf64(x)
			case tF16:
				x, _ := z.Float64()
				return uint64(f32ToF16(float32(x), mode))
			}
			return 0
		}
	case !dt.float() && st.float(): // float to integer: round, saturate, NaN -> 0
		if !m.intRnd {
			return fn, 0, true, fmt.Errorf("cvt from float to integer needs .rni, .rzi, .rmi or .rpi")
		}
		fn.f1 = func(a uint64) uint64 {
			x := roundInt(readF(a), mode)
			return floatToInt(x, dt)
		}
	default: // float to float
		fn.f1 = func(a uint64) uint64 {
			x := readF(a)
			if m.intRnd {
				x = roundInt(x, mode)
			}
			switch dt {
			case tF32:
				var f float32
				if st == tF64 && !m.intRnd {
					md := mode
					if md == rnDefault {
						md = rnNear
					}
					f = roundF32(x, 0, md)
				} else {
					f = float32(x)
				}
				if ftz {
					f = flush32(f)
				}
				if sat {
					f = sat32(f)
				}
				return bitsOf32(f)
			case tF64:
				if sat {
					x = sat64(x)
				}
				return bitsOf64(x)
			case tF16:
				return uint64(f32ToF16(float32(x), mode))
			case tBF16:
				b := math.Float32bits(float32(x))
				if x != x {
					return 0x7fff
				}
				// round to nearest even on the upper half
				b += 0x7fff + (b>>16)&1
				return uint64(b >> 16)
			}
			return 0
		}
	}
	return fn, 1, true, nil
}

// bigErrSign is the sign of z - x.
//
//go:norace
func bigErrSign(z *big.Float, x float64) int {
	return z.Cmp(new(big.Float).SetFloat64(x))
}

//go:norace
func roundInt(x float64, mode uint8) float64 {
	switch mode {
	case rnZero:
		return math.Trunc(x)
	case rnDown:
		return math.Floor(x)
	case rnUp:
		return math.Ceil(x)
	}
	return math.RoundToEven(x)
}

// floatToInt converts an integral float to t, saturating; NaN gives 0.
//
//go:norace
func floatToInt(x float64, t typ) uint64 {
	if x != x {
		return 0
	}
	w := t.bits()
	if t.signed() {
		lo, hi := -math.Ldexp(1, int(w)-1), math.Ldexp(1, int(w)-1)
		switch {
		case x < lo:
			return t.trunc(uint64(1) << (w - 1))
		case x >= hi:
			return t.trunc(uint64(1)<<(w-1) - 1)
		}
		return t.trunc(uint64(int64(x)))
	}
	hi := math.Ldexp(1, int(w))
	switch {
	case x <= 0:
		return 0
	case x >= hi:
		return t.trunc(math.MaxUint64)
	}
	return uint64(x)
}

// satInt clamps an integer (sign-extended if signed) to t's range.
//
//go:norace
func satInt(v uint64, signed bool, t typ) uint64 {
	w := t.bits()
	if t.signed() {
		lo, hi := -int64(1)<<(w-1), int64(1)<<(w-1)-1
		if w == 64 {
			if !signed && int64(v) < 0 {
				return uint64(hi)
			}
			return v
		}
		if signed {
			return t.trunc(uint64(max(min(int64(v), hi), lo)))
		}
		if v > uint64(hi) {
			return uint64(hi)
		}
		return v
	}
	hi := uint64(math.MaxUint64)
	if w < 64 {
		hi = 1<<w - 1
	}
	if signed && int64(v) < 0 {
		return 0
	}
	return min(v, hi)
}

// f32ToF16 converts to IEEE half precision in mode (nearest even by default).
//
//go:norace
func f32ToF16(f float32, mode uint8) uint16 {
	x := float64(f)
	sign := uint16(0)
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	switch {
	case x != x:
		return 0x7fff
	case math.IsInf(x, 0):
		return sign | 0x7c00
	}
	// scale to an integer count of the result's units
	e := math.Ilogb(x)
	if x == 0 {
		return sign
	}
	if e < -14 {
		e = -14
	}
	unit := math.Ldexp(1, e-10)
	q := x / unit // exact: x has 24 bits
	var r float64
	switch {
	case mode == rnZero, mode == rnDown && sign == 0, mode == rnUp && sign != 0:
		r = math.Floor(q)
	case mode == rnUp && sign == 0, mode == rnDown && sign != 0:
		r = math.Ceil(q)
	default:
		r = math.RoundToEven(q)
	}
	v := r * unit
	if v >= 65520 || v > 65504 {
		if mode == rnNear || mode == rnDefault || r > 0 && (mode == rnUp && sign == 0 || mode == rnDown && sign != 0) {
			return sign | 0x7c00
		}
		return sign | 0x7bff
	}
	if v == 0 {
		return sign
	}
	ev := math.Ilogb(v)
	if ev < -14 { // subnormal
		return sign | uint16(math.Ldexp(v, 24))
	}
	mant := uint16(math.Ldexp(v, -ev+10)) & 0x3ff
	return sign | uint16(ev+15)<<10 | mant
}

// f16ToF32 converts IEEE half precision to f32 (exactly).
//
//go:norace
func f16ToF32(h uint16) float32 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return float32(sign * math.Ldexp(m, -24))
	case 31:
		if m != 0 {
			return float32(math.NaN())
		}
		return float32(sign * math.Inf(1))
	}
	return float32(sign * math.Ldexp(1024+m, e-25))
}
