package ptx

import (
	"fmt"
	"math"
	"math/bits"
)

// aluFns are an ALU instruction's lane functions and its source types.
type aluFns struct {
	f1          func(uint64) uint64
	f2          func(a, b uint64) uint64
	f3          func(a, b, c uint64) uint64
	f4          func(a, b, c, d uint64) uint64
	srcT, srcT2 typ
}

// aluFunc returns the lane function of an ALU instruction: ok=false when
// base is not an ALU operation; an error for a form it refuses.
//
//go:norace
func aluFunc(base string, m mods, t typ) (fn aluFns, n int, ok bool, err error) {
	if t.float() || t == tF16x2 || t == tBF16x2 {
		if base == "cvt" {
			return cvtFunc(m)
		}
		if base == "set" || base == "slct" {
			return intFunc(base, m, t)
		}
		return floatFunc(base, m, t)
	}
	if base == "cvt" {
		return cvtFunc(m)
	}
	return intFunc(base, m, t)
}

//go:norace
func sx(t typ, v uint64) int64 { return int64(t.ext(v)) }

//go:norace
func intFunc(base string, m mods, t typ) (fn aluFns, n int, ok bool, err error) {
	w := t.bits()
	tr := t.trunc
	signed := t.signed()
	ok = true
	switch base {
	case "add", "sub":
		sub := base == "sub"
		if m.sat {
			if t != tS32 {
				return fn, 0, true, fmt.Errorf(".sat needs .s32")
			}
			fn.f2 = func(a, b uint64) uint64 {
				x, y := int64(int32(a)), int64(int32(b))
				r := x + y
				if sub {
					r = x - y
				}
				return uint64(uint32(int32(max(min(r, math.MaxInt32), math.MinInt32))))
			}
			return fn, 2, true, nil
		}
		if sub {
			fn.f2 = func(a, b uint64) uint64 { return tr(a - b) }
		} else if w == 64 {
			fn.f2 = func(a, b uint64) uint64 { return a + b }
		} else {
			fn.f2 = func(a, b uint64) uint64 { return tr(a + b) }
		}
		return fn, 2, true, nil
	case "mul", "mad":
		hi, wide := m.other["hi"], m.other["wide"]
		if !hi && !wide && !m.other["lo"] {
			return fn, 0, true, fmt.Errorf("needs .lo, .hi or .wide")
		}
		var f func(a, b uint64) uint64
		switch {
		case wide:
			if w > 32 {
				return fn, 0, true, fmt.Errorf(".wide of 64-bit operands")
			}
			f = func(a, b uint64) uint64 {
				if signed {
					return uint64(sx(t, a) * sx(t, b))
				}
				return tr(a) * tr(b)
			}
		case hi:
			f = func(a, b uint64) uint64 { return tr(mulPart(a, b, w, signed, true)) }
		default:
			f = func(a, b uint64) uint64 { return tr(a * b) }
		}
		if base == "mul" {
			fn.f2 = f
			return fn, 2, true, nil
		}
		if m.sat {
			if !hi || t != tS32 {
				return fn, 0, true, fmt.Errorf(".sat needs mad.hi.s32")
			}
			fn.f3 = madHiSat
			return fn, 3, true, nil
		}
		if wide {
			fn.f3 = func(a, b, c uint64) uint64 { return f(a, b) + c }
			fn.srcT2 = map[uint]typ{8: tU16, 16: tU32, 32: tU64}[w]
			if w == 32 {
				fn.srcT2 = tB64
			}
		} else {
			fn.f3 = func(a, b, c uint64) uint64 { return tr(f(a, b) + c) }
		}
		return fn, 3, true, nil
	case "mul24", "mad24":
		hi := m.other["hi"]
		if w != 32 {
			return fn, 0, true, fmt.Errorf("24-bit multiplies of .u32 and .s32 only")
		}
		if m.sat && (base != "mad24" || !hi || t != tS32) {
			return fn, 0, true, fmt.Errorf(".sat needs mad24.hi.s32")
		}
		mul := func(a, b uint64) uint64 {
			var p int64
			if signed {
				p = int64(int32(uint32(a)<<8)>>8) * int64(int32(uint32(b)<<8)>>8)
			} else {
				p = int64(a&0xffffff) * int64(b&0xffffff)
			}
			if hi {
				return uint64(uint32(uint64(p) >> 16))
			}
			return uint64(uint32(p))
		}
		if base == "mul24" {
			fn.f2 = mul
			return fn, 2, true, nil
		}
		fn.f3 = func(a, b, c uint64) uint64 { return uint64(uint32(mul(a, b) + c)) }
		if m.sat {
			// "limits result to MININT..MAXINT (no overflow)"
			fn.f3 = func(a, b, c uint64) uint64 {
				s := int64(int32(mul(a, b))) + int64(int32(c))
				return uint64(uint32(int32(max(min(s, math.MaxInt32), math.MinInt32))))
			}
		}
		return fn, 3, true, nil
	case "dp4a", "dp2a":
		if len(m.types) != 2 || !int32Type(m.types[0]) || !int32Type(m.types[1]) {
			return fn, 0, true, fmt.Errorf("%s needs two types of .u32 and .s32", base)
		}
		fn.f3 = dotFunc(base == "dp2a", m.other["hi"], m.types[0].signed(), m.types[1].signed())
		return fn, 3, true, nil
	case "bmsk":
		if t != tB32 {
			return fn, 0, true, fmt.Errorf("bmsk takes .b32")
		}
		clamp := m.other["clamp"]
		fn.srcT2 = tU32
		fn.f2 = func(a, b uint64) uint64 { return uint64(bmsk(uint32(a), uint32(b), clamp)) }
		return fn, 2, true, nil
	case "szext":
		if t != tU32 && t != tS32 {
			return fn, 0, true, fmt.Errorf("szext takes .u32 or .s32")
		}
		clamp := m.other["clamp"]
		fn.srcT2 = tU32
		fn.f2 = func(a, b uint64) uint64 { return uint64(szext(uint32(a), uint32(b), clamp, signed)) }
		return fn, 2, true, nil
	case "div", "rem":
		isDiv := base == "div"
		fn.f2 = func(a, b uint64) uint64 {
			if tr(b) == 0 {
				// The ISA leaves division by zero unspecified; this is what
				// NVIDIA GPUs give: all ones for the quotient, the dividend for the remainder.
				if isDiv {
					return tr(math.MaxUint64)
				}
				return tr(a)
			}
			if signed {
				x, y := sx(t, a), sx(t, b)
				if y == -1 {
					if isDiv {
						return tr(uint64(-x))
					}
					return 0
				}
				if isDiv {
					return tr(uint64(x / y))
				}
				return tr(uint64(x % y))
			}
			if isDiv {
				return tr(a) / tr(b)
			}
			return tr(a) % tr(b)
		}
		return fn, 2, true, nil
	case "abs":
		fn.f1 = func(a uint64) uint64 {
			x := sx(t, a)
			if x < 0 {
				x = -x
			}
			return tr(uint64(x))
		}
		return fn, 1, true, nil
	case "neg":
		fn.f1 = func(a uint64) uint64 { return tr(-a) }
		return fn, 1, true, nil
	case "min", "max":
		isMin := base == "min"
		fn.f2 = func(a, b uint64) uint64 {
			var less bool
			if signed {
				less = sx(t, a) < sx(t, b)
			} else {
				less = tr(a) < tr(b)
			}
			if less == isMin {
				return tr(a)
			}
			return tr(b)
		}
		return fn, 2, true, nil
	case "and", "or", "xor":
		if t == tPred {
			tr = func(v uint64) uint64 { return v & 1 }
		}
		switch base {
		case "and":
			fn.f2 = func(a, b uint64) uint64 { return tr(a & b) }
		case "or":
			fn.f2 = func(a, b uint64) uint64 { return tr(a | b) }
		default:
			fn.f2 = func(a, b uint64) uint64 { return tr(a ^ b) }
		}
		return fn, 2, true, nil
	case "not":
		if t == tPred {
			fn.f1 = func(a uint64) uint64 { return (^a) & 1 }
		} else {
			fn.f1 = func(a uint64) uint64 { return tr(^a) }
		}
		return fn, 1, true, nil
	case "cnot":
		fn.f1 = func(a uint64) uint64 {
			if tr(a) == 0 {
				return 1
			}
			return 0
		}
		return fn, 1, true, nil
	case "shl", "shr":
		fn.srcT2 = tU32
		left := base == "shl"
		fn.f2 = func(a, b uint64) uint64 {
			s := uint32(b)
			if left {
				if uint(s) >= w {
					return 0
				}
				return tr(a << s)
			}
			if signed {
				if uint(s) >= w {
					s = uint32(w - 1)
				}
				return tr(uint64(sx(t, a) >> s))
			}
			if uint(s) >= w {
				return 0
			}
			return tr(a) >> s
		}
		return fn, 2, true, nil
	case "popc":
		fn.f1 = func(a uint64) uint64 { return uint64(bits.OnesCount64(tr(a))) }
		return fn, 1, true, nil
	case "clz":
		fn.f1 = func(a uint64) uint64 { return uint64(bits.LeadingZeros64(tr(a)) - (64 - int(w))) }
		return fn, 1, true, nil
	case "brev":
		fn.f1 = func(a uint64) uint64 { return bits.Reverse64(a) >> (64 - w) }
		return fn, 1, true, nil
	case "bfind":
		shiftamt := m.other["shiftamt"]
		fn.f1 = func(a uint64) uint64 {
			x := tr(a)
			if signed && sx(t, a) < 0 {
				x = tr(^a)
			}
			if x == 0 {
				return 0xffffffff
			}
			pos := uint64(63 - bits.LeadingZeros64(x))
			if shiftamt {
				return uint64(w-1) - pos
			}
			return pos
		}
		return fn, 1, true, nil
	case "bfe":
		fn.srcT2 = tU32
		fn.f3 = func(a, b, c uint64) uint64 {
			pos, ln := uint(uint8(b)), uint(uint8(c))
			var sbit uint64
			if signed && ln > 0 {
				p := min(pos+ln-1, w-1)
				sbit = (a >> p) & 1
			}
			var r uint64
			for i := uint(0); i < w; i++ {
				var bit uint64
				if i < ln && pos+i <= w-1 {
					bit = (a >> (pos + i)) & 1
				} else if i < ln {
					bit = sbit
					if !signed {
						bit = 0
					}
				} else {
					bit = sbit
				}
				r |= bit << i
			}
			return tr(r)
		}
		return fn, 3, true, nil
	case "bfi":
		fn.srcT2 = tU32
		fn.f4 = func(a, b, c, d uint64) uint64 {
			pos, ln := uint(uint8(c)), uint(uint8(d))
			r := tr(b)
			for i := uint(0); i < ln && pos+i < w; i++ {
				bit := uint64(1) << (pos + i)
				r = r&^bit | (a>>i&1)<<(pos+i)
			}
			return tr(r)
		}
		return fn, 4, true, nil
	case "prmt":
		if f, ok := prmtModeFunc(m); ok {
			fn.f3 = f
			return fn, 3, true, nil
		}
		fn.f3 = func(a, b, c uint64) uint64 {
			src := uint64(uint32(a)) | uint64(uint32(b))<<32
			var r uint64
			for i := 0; i < 4; i++ {
				sel := (c >> (4 * i)) & 0xf
				by := (src >> (8 * (sel & 7))) & 0xff
				if sel&8 != 0 {
					if by&0x80 != 0 {
						by = 0xff
					} else {
						by = 0
					}
				}
				r |= by << (8 * i)
			}
			return r
		}
		return fn, 3, true, nil
	case "sad":
		fn.f3 = func(a, b, c uint64) uint64 {
			var d uint64
			if signed {
				x, y := sx(t, a), sx(t, b)
				if x > y {
					d = uint64(x - y)
				} else {
					d = uint64(y - x)
				}
			} else if tr(a) > tr(b) {
				d = tr(a) - tr(b)
			} else {
				d = tr(b) - tr(a)
			}
			return tr(c + d)
		}
		return fn, 3, true, nil
	case "shf":
		left, clamp := m.other["l"], m.other["clamp"]
		fn.f3 = func(a, b, c uint64) uint64 {
			n := uint32(c)
			if clamp {
				n = min(n, 32)
			} else {
				n &= 31
			}
			v := uint64(uint32(b))<<32 | uint64(uint32(a))
			if left {
				return uint64(uint32((v << n) >> 32))
			}
			return uint64(uint32(v >> n))
		}
		return fn, 3, true, nil
	case "set":
		if len(m.types) != 2 || m.bop != "" {
			return fn, 0, true, fmt.Errorf("set needs a destination and a source type, without a predicate operand")
		}
		st := m.types[1]
		cmp, err := cmpFunc(m.cmp, st, m.ftz)
		if err != nil {
			return fn, 0, true, err
		}
		fn.srcT = st
		isF := t == tF32
		fn.f2 = func(a, b uint64) uint64 {
			if cmp(a, b) {
				if isF {
					return uint64(math.Float32bits(1))
				}
				return 0xffffffff
			}
			return 0
		}
		return fn, 2, true, nil
	case "slct":
		if len(m.types) != 2 {
			return fn, 0, true, fmt.Errorf("slct needs two types")
		}
		ct := m.types[1]
		fn.srcT2 = ct
		ftz := m.ftz
		fn.f3 = func(a, b, c uint64) uint64 {
			if ct == tF32 {
				f := math.Float32frombits(uint32(c))
				if ftz {
					f = flush32(f) // a subnormal c is a zero: a is selected
				}
				if f >= 0 {
					return a
				}
				return b
			}
			if int32(c) >= 0 {
				return a
			}
			return b
		}
		return fn, 3, true, nil
	}
	return fn, 0, false, nil
}

// mulPart returns the low or high w bits of a*b at width w.
//
//go:norace
func mulPart(a, b uint64, w uint, signed, hi bool) uint64 {
	if w == 64 {
		if !hi {
			return a * b
		}
		h, _ := bits.Mul64(a, b)
		if signed {
			if int64(a) < 0 {
				h -= b
			}
			if int64(b) < 0 {
				h -= a
			}
		}
		return h
	}
	var p uint64
	if signed {
		t := map[uint]typ{8: tS8, 16: tS16, 32: tS32}[w]
		p = uint64(sx(t, a) * sx(t, b))
	} else {
		mask := uint64(1)<<w - 1
		p = (a & mask) * (b & mask)
	}
	if hi {
		return p >> w
	}
	return p
}

// addCarry adds with carry in at width w, returning the sum and carry out.
//
//go:norace
func addCarry(a, b, cin uint64, w uint) (uint64, uint64) {
	if w == 64 {
		s, c := bits.Add64(a, b, cin&1)
		return s, c
	}
	s := a + b + cin&1
	return s & (1<<w - 1), s >> w & 1
}

// subBorrow subtracts with borrow in; the carry flag holds the borrow.
//
//go:norace
func subBorrow(a, b, bin uint64, w uint) (uint64, uint64) {
	if w == 64 {
		d, c := bits.Sub64(a, b, bin&1)
		return d, c
	}
	d := a - b - bin&1
	return d & (1<<w - 1), d >> 63 & 1
}

// cmpFunc returns setp's comparison for type t.
//
//go:norace
func cmpFunc(cmp string, t typ, ftz bool) (func(a, b uint64) bool, error) {
	if t == tF32 || t == tF64 {
		return floatCmp(cmp, t, ftz)
	}
	if t.float() || t == tNone || t == tPred {
		return nil, fmt.Errorf("comparison of .%s", typName(t))
	}
	signed := t.signed()
	tr := t.trunc
	switch cmp {
	case "eq":
		return func(a, b uint64) bool { return tr(a) == tr(b) }, nil
	case "ne":
		return func(a, b uint64) bool { return tr(a) != tr(b) }, nil
	case "lo":
		signed = false
		cmp = "lt"
	case "ls":
		signed = false
		cmp = "le"
	case "hi":
		signed = false
		cmp = "gt"
	case "hs":
		signed = false
		cmp = "ge"
	}
	if signed {
		switch cmp {
		case "lt":
			return func(a, b uint64) bool { return sx(t, a) < sx(t, b) }, nil
		case "le":
			return func(a, b uint64) bool { return sx(t, a) <= sx(t, b) }, nil
		case "gt":
			return func(a, b uint64) bool { return sx(t, a) > sx(t, b) }, nil
		case "ge":
			return func(a, b uint64) bool { return sx(t, a) >= sx(t, b) }, nil
		}
	} else {
		switch cmp {
		case "lt":
			return func(a, b uint64) bool { return tr(a) < tr(b) }, nil
		case "le":
			return func(a, b uint64) bool { return tr(a) <= tr(b) }, nil
		case "gt":
			return func(a, b uint64) bool { return tr(a) > tr(b) }, nil
		case "ge":
			return func(a, b uint64) bool { return tr(a) >= tr(b) }, nil
		}
	}
	return nil, fmt.Errorf("comparison .%s of integers", cmp)
}
