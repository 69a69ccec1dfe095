package ptx

import (
	"fmt"
	"math"
)

// Half precision: IEEE binary16 (.f16) and bfloat16 (.bf16), scalar and
// packed two to a 32-bit register (.f16x2, .bf16x2: element 0 in bits
// 0..15, element 1 in bits 16..31). Every operation is computed exactly in
// float64 (with the sign of its error where float64 cannot hold the exact
// value) and rounded once to the half format.

// halfFmt describes a 16-bit floating-point format.
type halfFmt struct {
	mant uint // stored mantissa bits
	bias int  // exponent bias
}

var (
	fmtF16  = halfFmt{mant: 10, bias: 15}
	fmtBF16 = halfFmt{mant: 7, bias: 127}
)

// canonNaN16 is the NaN half-precision results give: the ISA leaves
// half-precision NaNs unspecified ("Half-precision instructions return an
// unspecified NaN") and calls the one .relu gives canonical; 0x7fff is the
// canonical NaN of both formats on NVIDIA GPUs.
const canonNaN16 = 0x7fff

//go:norace
func (f halfFmt) inf() uint32 { return uint32(2*f.bias+1) << f.mant }

// toF64 converts a half-precision value to float64 (exactly).
//
//go:norace
func (f halfFmt) toF64(h uint16) float64 {
	if f.mant == 7 {
		return float64(math.Float32frombits(uint32(h) << 16))
	}
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return sign * math.Ldexp(m, -24)
	case 31:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1024+m, e-25)
}

// isNaN, isSub report whether h is a NaN, a subnormal.
//
//go:norace
func (f halfFmt) isNaN(h uint16) bool { return uint32(h&0x7fff) > f.inf() }

//go:norace
func (f halfFmt) isSub(h uint16) bool { return h&0x7fff != 0 && uint32(h&0x7fff) < 1<<f.mant }

// flush returns h with a subnormal flushed to a zero of its sign.
//
//go:norace
func (f halfFmt) flush(h uint16) uint16 {
	if f.isSub(h) {
		return h & 0x8000
	}
	return h
}

// round rounds x + (a tiny quantity of sign e) to the format in mode
// (rnDefault is to nearest even); a NaN gives the canonical NaN.
//
//go:norace
func (f halfFmt) round(x float64, e int, mode uint8) uint16 {
	if x != x {
		return canonNaN16
	}
	var sign uint16
	if math.Signbit(x) {
		sign, x, e = 0x8000, -x, -e
	}
	inf := f.inf()
	overflow := func() uint16 {
		if mode == rnZero || mode == rnUp && sign != 0 || mode == rnDown && sign == 0 {
			return sign | uint16(inf-1)
		}
		return sign | uint16(inf)
	}
	if x > math.MaxFloat64 {
		return sign | uint16(inf)
	}
	if x == 0 {
		return sign
	}
	emin := 1 - f.bias
	ex := math.Ilogb(x)
	if ex > f.bias {
		return overflow()
	}
	if ex < emin {
		ex = emin
	}
	q := math.Ldexp(x, int(f.mant)-ex) // x in units of the result's last place
	r := math.Floor(q)
	frac := q - r // exact
	bits := uint32(ex-emin)<<f.mant + uint32(r)
	// where the exact value lies between bits and the next: 0 on bits,
	// 1 below the midpoint, 2 on it, 3 above it
	var at int
	switch {
	case frac == 0 && e == 0:
		at = 0
	case frac == 0 && e < 0: // just below bits: it lies above the midpoint below
		bits--
		at = 3
	case frac == 0, frac < 0.5:
		at = 1
	case frac > 0.5:
		at = 3
	case e > 0:
		at = 3
	case e < 0:
		at = 1
	default:
		at = 2
	}
	if at != 0 {
		up := false
		switch mode {
		case rnZero:
		case rnUp:
			up = sign == 0
		case rnDown:
			up = sign != 0
		default:
			up = at == 3 || at == 2 && bits&1 == 1
		}
		if up {
			bits++
		}
	}
	if bits >= inf {
		return overflow()
	}
	return sign | uint16(bits)
}

// sum returns a+b rounded to float64 and the sign of its error.
//
//go:norace
func sum(a, b float64) (float64, int) {
	s := a + b
	if !finite(s) {
		return s, 0
	}
	return s, sgn(twoSumErr(a, b, s))
}

// halfSat is .sat: the result clamped to [0.0, 1.0], a NaN to +0.0.
//
//go:norace
func (f halfFmt) sat(h uint16) uint16 {
	switch {
	case f.isNaN(h), h&0x8000 != 0:
		return 0
	case uint32(h) > uint32(f.bias)<<f.mant: // above 1.0
		return uint16(uint32(f.bias) << f.mant)
	}
	return h
}

// finish applies to result h, in this order, .ftz, .sat, .satfinite and
// .relu where they are given.
//
//go:norace
func (f halfFmt) finish(h uint16, ftz, sat, satFinite, relu bool) uint16 {
	if ftz {
		h = f.flush(h)
	}
	if sat {
		h = f.sat(h)
	}
	if satFinite {
		h = f.satFinite(h)
	}
	if relu {
		h = f.relu(h)
	}
	return h
}

// relu is .relu: a negative result clamped to +0, a NaN made canonical.
// The interpreter clamps -0.0 to +0.0 as well.
//
//go:norace
func (f halfFmt) relu(h uint16) uint16 {
	switch {
	case f.isNaN(h):
		return canonNaN16
	case h&0x8000 != 0:
		return 0
	}
	return h
}

// satFinite is .satfinite: an infinite result becomes the largest finite
// value of its sign; a NaN stays NaN (canonical).
//
//go:norace
func (f halfFmt) satFinite(h uint16) uint16 {
	switch {
	case f.isNaN(h):
		return canonNaN16
	case uint32(h&0x7fff) == f.inf():
		return h&0x8000 | uint16(f.inf()-1)
	}
	return h
}

// halfMinMax is min and max on half precision, as the ISA's semantics
// say: a NaN operand gives the other (.NaN: the canonical NaN), +0.0 is
// greater than -0.0, .xorsign.abs compares magnitudes and gives the result
// the XOR of the operands' signs.
//
//go:norace
func (f halfFmt) minMax(a, b uint16, isMax, nanProp, xorAbs bool) uint16 {
	xs := (a ^ b) & 0x8000
	if xorAbs {
		a, b = a&0x7fff, b&0x7fff
	}
	an, bn := f.isNaN(a), f.isNaN(b)
	var d uint16
	switch {
	case an && bn, nanProp && (an || bn):
		return canonNaN16
	case an:
		d = b
	case bn:
		d = a
	default:
		x, y := f.toF64(a), f.toF64(b)
		switch {
		case x == y && x == 0:
			// +0.0 > -0.0
			if (a&0x8000 == 0) == isMax {
				d = a
			} else {
				d = b
			}
		case (x > y) == isMax:
			d = a
		default:
			d = b
		}
	}
	if xorAbs {
		d = d&0x7fff | xs
	}
	return d
}

// halfFunc returns the lane function of a half-precision arithmetic
// instruction (.f16, .bf16, .f16x2, .bf16x2).
//
//go:norace
func halfFunc(base string, m mods, t typ) (fn aluFns, n int, ok bool, err error) {
	f := fmtF16
	if t == tBF16 || t == tBF16x2 {
		f = fmtBF16
	}
	isBF := f == fmtBF16
	packed := t == tF16x2 || t == tBF16x2
	relu := m.other["relu"]
	if m.rnd != rnDefault && m.rnd != rnNear || m.intRnd {
		return fn, 0, true, fmt.Errorf("half-precision %s rounds to nearest (.rn) only", base)
	}
	if isBF && (m.ftz || m.sat) {
		return fn, 0, true, fmt.Errorf(".ftz and .sat are not defined for .bf16 arithmetic")
	}
	if m.approx || m.other["oob"] {
		return fn, 0, true, fmt.Errorf("%s.%s with these modifiers is not supported", base, typName(t))
	}
	if relu && (base != "fma" || m.sat) {
		return fn, 0, true, fmt.Errorf(".relu applies to half-precision fma only, without .sat")
	}
	ftz, sat := m.ftz, m.sat
	in := func(h uint16) float64 {
		if ftz {
			h = f.flush(h)
		}
		return f.toF64(h)
	}
	out := func(h uint16) uint16 { return f.finish(h, ftz, sat, false, relu) }
	var g func(a, b, c uint16) uint16
	n = 2
	switch base {
	case "add":
		g = func(a, b, _ uint16) uint16 { s, e := sum(in(a), in(b)); return out(f.round(s, e, rnNear)) }
	case "sub":
		g = func(a, b, _ uint16) uint16 { s, e := sum(in(a), -in(b)); return out(f.round(s, e, rnNear)) }
	case "mul":
		// the product of two half-precision values is exact in float64
		g = func(a, b, _ uint16) uint16 { return out(f.round(in(a)*in(b), 0, rnNear)) }
	case "fma":
		n = 3
		g = func(a, b, c uint16) uint16 { s, e := sum(in(a)*in(b), in(c)); return out(f.round(s, e, rnNear)) }
	case "neg", "abs":
		n = 1
		if sat || m.rnd != rnDefault {
			return fn, 0, true, fmt.Errorf("%s takes no rounding or saturation modifier", base)
		}
		neg := base == "neg"
		g = func(a, _, _ uint16) uint16 {
			if ftz {
				a = f.flush(a)
			}
			if neg {
				return a ^ 0x8000
			}
			return a &^ 0x8000
		}
	case "min", "max":
		if sat || m.rnd != rnDefault {
			return fn, 0, true, fmt.Errorf("%s takes no rounding or saturation modifier", base)
		}
		isMax, nan := base == "max", m.other["NaN"]
		xorAbs := m.other["xorsign"] || m.other["abs"]
		if xorAbs && !(m.other["xorsign"] && m.other["abs"]) {
			return fn, 0, true, fmt.Errorf(".xorsign and .abs go together")
		}
		g = func(a, b, _ uint16) uint16 {
			if ftz {
				a, b = f.flush(a), f.flush(b)
			}
			return out(f.minMax(a, b, isMax, nan, xorAbs))
		}
	default:
		return fn, 0, true, fmt.Errorf("%s.%s is not supported", base, typName(t))
	}
	if !packed {
		return byArity(n, func(a, b, c uint64) uint64 { return uint64(g(uint16(a), uint16(b), uint16(c))) }), n, true, nil
	}
	return byArity(n, func(a, b, c uint64) uint64 {
		lo, hi := g(uint16(a), uint16(b), uint16(c)), g(uint16(a>>16), uint16(b>>16), uint16(c>>16))
		return uint64(hi)<<16 | uint64(lo)
	}), n, true, nil
}

// halfCmp returns the comparison of set and setp (ri, m) on two values of
// half-precision type t (the low 16 bits of a and b), as they compare
// floats.
//
//go:norace
func halfCmp(ri rawInst, m mods, t typ) (func(a, b uint16) bool, error) {
	f, ftz := halfFmtOf(t), m.ftz
	if f == fmtBF16 && ftz {
		return nil, errf(ri.line, "%s: .ftz is not defined for .bf16", ri.opcode)
	}
	get := func(h uint16) float64 {
		if ftz {
			h = f.flush(h)
		}
		return f.toF64(h)
	}
	c, err := compareBy(m.cmp, get)
	if err != nil {
		return nil, errf(ri.line, "%s: %v", ri.opcode, err)
	}
	return c, nil
}

// isHalf reports whether t is a half-precision type, scalar or packed.
func isHalf(t typ) bool { return t == tF16 || t == tBF16 || t == tF16x2 || t == tBF16x2 }

func halfFmtOf(t typ) halfFmt {
	if t == tBF16 || t == tBF16x2 {
		return fmtBF16
	}
	return fmtF16
}

// decodeHalf decodes what the interpreter's generic paths cannot: every
// cvt (its destination register's width, packed conversions), and set and
// setp comparing half-precision values. done is false for anything else.
func (b *builder) decodeHalf(ri rawInst, in inst, m mods, base string) (inst, bool, error) {
	switch base {
	case "cvt":
		out, err := b.decodeCvt(ri, in, m)
		return out, true, err
	case "set":
		if len(m.types) == 2 && (isHalf(m.types[0]) || isHalf(m.types[1])) {
			out, err := b.decodeHalfSet(ri, in, m)
			return out, true, err
		}
	case "setp":
		if len(m.types) == 1 && isHalf(m.types[0]) {
			out, err := b.decodeHalfSetp(ri, in, m)
			return out, true, err
		}
	}
	return in, false, nil
}

// decodeHalfSet decodes set.CmpOp{.ftz}.dtype.stype d, a, b with a
// half-precision source type.
func (b *builder) decodeHalfSet(ri rawInst, in inst, m mods) (inst, error) {
	dt, st := m.types[0], m.types[1]
	if m.bop != "" {
		return in, errf(ri.line, "%s: set with a predicate operand is not supported", ri.opcode)
	}
	if !isHalf(st) {
		return in, errf(ri.line, "%s: set to a half-precision result of a .%s comparison is not supported", ri.opcode, typName(st))
	}
	cmp, err := halfCmp(ri, m, st)
	if err != nil {
		return in, err
	}
	packed := st == tF16x2 || st == tBF16x2
	var one uint64
	switch {
	case dt == tU16 || dt == tS16:
		one = 0xffff
		if packed {
			return in, errf(ri.line, "%s: destination type for a packed comparison", ri.opcode)
		}
	case dt == tU32 || dt == tS32:
		one = 0xffffffff
		if packed {
			one = 0xffff
		}
	case dt == tF16 && !packed, dt == tF16x2 && packed && st == tF16x2:
		one = uint64(uint32(fmtF16.bias) << fmtF16.mant) // 1.0
	case dt == tBF16 && !packed, dt == tBF16x2 && packed && st == tBF16x2:
		one = uint64(uint32(fmtBF16.bias) << fmtBF16.mant)
	default:
		return in, errf(ri.line, "%s: destination type .%s", ri.opcode, typName(dt))
	}
	if packed {
		in.f2 = func(a, b uint64) uint64 {
			var d uint64
			if cmp(uint16(a), uint16(b)) {
				d = one
			}
			if cmp(uint16(a>>16), uint16(b>>16)) {
				d |= one << 16
			}
			return d
		}
	} else {
		in.f2 = func(a, b uint64) uint64 {
			if cmp(uint16(a), uint16(b)) {
				return one
			}
			return 0
		}
	}
	in.t = dt
	return b.aluT(ri, in, 2, st, tNone)
}

// decodeHalfSetp decodes setp on .f16 and .bf16 (through the generic setp,
// with the half-precision comparison) and on .f16x2 and .bf16x2 (p|q: p
// from the low halves, q from the high halves), as two instructions: the
// comparisons with the Boolean operation into a temporary register, then
// an unpack of it into p and q.
func (b *builder) decodeHalfSetp(ri rawInst, in inst, m mods) (inst, error) {
	t := m.types[0]
	cmp, err := halfCmp(ri, m, t)
	if err != nil {
		return in, err
	}
	if t == tF16 || t == tBF16 {
		m2 := m
		m2.cmp, m2.ftz = "eq", false
		in.t = tB16
		out, err := b.decodeSetp(ri, in, m2)
		out.cmp = func(a, b uint64) bool { return cmp(uint16(a), uint16(b)) }
		out.t = t
		return out, err
	}
	if len(ri.ops) != 3 && len(ri.ops) != 4 {
		return in, errf(ri.line, "setp takes 3 or 4 operands")
	}
	d := ri.ops[0]
	if d.kind != roPair {
		return in, errf(ri.line, "%s writes two predicates, p|q", ri.opcode)
	}
	var bop func(x, y bool) bool
	negC := false
	if len(ri.ops) == 4 {
		if bop = boolOp(m.bop); bop == nil {
			return in, errf(ri.line, "setp with a predicate operand needs .and, .or or .xor")
		}
		if ri.ops[3].kind == roNot {
			negC = true
		}
	}
	tmp := b.newReg(tB64)
	pre := inst{op: opALU3, na: 3, t: tB64, ab: -1, guard: -1, line: int32(ri.line)}
	for i := range pre.d {
		pre.d[i] = -1
	}
	pre.d[0] = tmp
	for i := 0; i < 2; i++ {
		if pre.a[i], err = b.src(ri.ops[i+1], tB32); err != nil {
			return in, err
		}
	}
	pre.a[2] = b.constReg(0)
	if bop != nil {
		p := ri.ops[3]
		p.kind = roName
		if pre.a[2], err = b.src(p, tPred); err != nil {
			return in, err
		}
	}
	pre.f3 = func(a, b, c uint64) uint64 {
		lo, hi := cmp(uint16(a), uint16(b)), cmp(uint16(a>>16), uint16(b>>16))
		if bop != nil {
			cv := (c&1 != 0) != negC
			lo, hi = bop(lo, cv), bop(hi, cv)
		}
		return b2u(lo) | b2u(hi)<<32
	}
	b.f.code = append(b.f.code, pre)
	in.op = opMovUnpack
	in.t = tB64
	in.nd = 2
	if in.d[0], err = b.dst(d.elems[0]); err != nil {
		return in, err
	}
	if in.d[1], err = b.dst(d.elems[1]); err != nil {
		return in, err
	}
	in.a[0] = tmp
	return in, nil
}
