package ptx

import (
	"math"
	"strings"
)

// Bit and integer instructions beyond alu_int.go's: lop3, fns, prmt's
// modes, mad.hi.sat.s32, set with a predicate operand, and isspacep.

// lop3Func is lop3's lane function for immLut: each bit of the result is
// bit (a<<2 | b<<1 | c) of immLut, as the ISA's ta = 0xF0, tb = 0xCC,
// tc = 0xAA define it.
//
//go:norace
func lop3Func(lut uint8) func(a, b, c uint64) uint64 {
	return func(a, b, c uint64) uint64 {
		var r uint64
		for i := uint(0); i < 8; i++ {
			if lut>>i&1 == 0 {
				continue
			}
			x, y, z := a, b, c
			if i&4 == 0 {
				x = ^x
			}
			if i&2 == 0 {
				y = ^y
			}
			if i&1 == 0 {
				z = ^z
			}
			r |= x & y & z
		}
		return uint64(uint32(r))
	}
}

// decodeLop3 decodes lop3.b32 d, a, b, c, immLut.
func (b *builder) decodeLop3(ri rawInst, in inst, m mods) (inst, error) {
	if m.bop != "" {
		return in, errf(ri.line, "%s: lop3 with a predicate result (.BoolOp) is not supported", ri.opcode)
	}
	if in.t != tB32 || len(m.types) != 1 {
		return in, errf(ri.line, "%s: lop3 takes .b32", ri.opcode)
	}
	if err := b.nops(ri, 5); err != nil {
		return in, err
	}
	lo := ri.ops[4]
	if lo.kind != roNum || lo.neg {
		return in, errf(ri.line, "%s: immLut must be an integer constant from 0 to 255", ri.opcode)
	}
	lut, err := parseInt(lo.num)
	if err != nil || lut < 0 || lut > 255 {
		return in, errf(ri.line, "%s: immLut must be an integer constant from 0 to 255", ri.opcode)
	}
	in.f3 = lop3Func(uint8(lut))
	ri.ops = ri.ops[:4]
	if err := b.checkRegSizes(ri, []typ{tB32, tB32, tB32, tB32}, false); err != nil {
		return in, err
	}
	return b.alu(ri, in, 3, tB32)
}

// fns is fns.b32 as the ISA's semantics give it: the position of the
// |offset|-th set bit of mask from base, upwards for a positive offset and
// downwards for a negative one; 0xffffffff when there is none.
//
//go:norace
func fns(mask, base uint32, offset int32) uint32 {
	if offset == 0 {
		if base < 32 && mask>>base&1 == 1 {
			return base
		}
		return 0xffffffff
	}
	count, inc := int64(offset), int32(1)
	if offset < 0 {
		count, inc = -count, -1
	}
	count--
	for pos := int32(base); pos >= 0 && pos < 32; pos += inc {
		if mask>>uint(pos)&1 == 1 {
			if count == 0 {
				return uint32(pos)
			}
			count--
		}
	}
	return 0xffffffff
}

// decodeFns decodes fns.b32 d, mask, base, offset.
func (b *builder) decodeFns(ri rawInst, in inst, m mods) (inst, error) {
	if in.t != tB32 || len(m.types) != 1 {
		return in, errf(ri.line, "%s: fns takes .b32", ri.opcode)
	}
	in.f3 = func(a, b, c uint64) uint64 { return uint64(fns(uint32(a), uint32(b), int32(uint32(c)))) }
	if err := b.checkRegSizes(ri, []typ{tB32, tB32, tB32, tS32}, false); err != nil {
		return in, err
	}
	return b.aluT(ri, in, 3, tB32, tS32)
}

// prmtModes are the source bytes of d.b0, d.b1, d.b2 and d.b3 for each
// value of c[1:0] in prmt's modes: the ISA's table (which lists them
// d.b3 first).
var prmtModes = map[string][4][4]uint8{
	"f4e":  {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},
	"b4e":  {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},
	"rc8":  {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
	"ecl":  {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},
	"ecr":  {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},
	"rc16": {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},
}

// prmtModeFunc returns prmt's lane function for a mode; ok is false
// without one (the generic form).
//
//go:norace
func prmtModeFunc(m mods) (f func(a, b, c uint64) uint64, ok bool) {
	for name, tab := range prmtModes {
		if !m.other[name] {
			continue
		}
		return func(a, b, c uint64) uint64 {
			src := uint64(uint32(a)) | uint64(uint32(b))<<32
			sel := &tab[c&3]
			var r uint64
			for i := 0; i < 4; i++ {
				r |= (src >> (8 * sel[i]) & 0xff) << (8 * i)
			}
			return r
		}, true
	}
	return nil, false
}

// madHiSat is mad.hi.sat.s32: the high half of a*b plus c, clamped to the
// range of .s32 ("limits result to MININT..MAXINT (no overflow)").
//
//go:norace
func madHiSat(a, b, c uint64) uint64 {
	hi := int64(int32(uint64(int64(int32(a))*int64(int32(b))) >> 32))
	return uint64(uint32(int32(max(min(hi+int64(int32(c)), math.MaxInt32), math.MinInt32))))
}

// decodeSetBool decodes set.CmpOp.BoolOp.dtype.stype d, a, b, {!}c: the
// comparison combined with predicate c, then 1.0f or 0xffffffff for true.
func (b *builder) decodeSetBool(ri rawInst, in inst, m mods) (inst, error) {
	if len(m.types) != 2 {
		return in, errf(ri.line, "%s: set needs a destination and a source type", ri.opcode)
	}
	st := m.types[1]
	cmp, err := cmpFunc(m.cmp, st, m.ftz)
	if err != nil {
		return in, errf(ri.line, "%s: %v", ri.opcode, err)
	}
	bop := boolOp(m.bop)
	if bop == nil {
		return in, errf(ri.line, "%s: set with a predicate operand needs .and, .or or .xor", ri.opcode)
	}
	if err := b.nops(ri, 4); err != nil {
		return in, err
	}
	neg := false
	if p := &ri.ops[3]; p.kind == roNot {
		neg, p.kind = true, roName
	}
	one := uint64(0xffffffff)
	if in.t == tF32 {
		one = uint64(math.Float32bits(1))
	}
	in.f3 = func(a, b, c uint64) uint64 {
		if bop(cmp(a, b), (c&1 != 0) != neg) {
			return one
		}
		return 0
	}
	return b.aluT(ri, in, 3, st, tPred)
}

// decodeIsspacep decodes isspacep.space p, a: whether generic address a
// lies in the window of the state space.
func (b *builder) decodeIsspacep(ri rawInst, in inst, parts []string) (inst, error) {
	if len(parts) != 2 {
		return in, errf(ri.line, "%s: isspacep takes one state space", ri.opcode)
	}
	inWin := func(a, win uint64) bool { return a-win < windowSize }
	var f func(a uint64) bool
	switch parts[1] {
	case "shared", "shared::cta", "shared::cluster":
		// without clusters, a cluster's shared window is the CTA's
		f = func(a uint64) bool { return inWin(a, sharedWindow) }
	case "local":
		// a .func parameter whose address is taken lives in local memory
		f = func(a uint64) bool { return inWin(a, localWindow) || inWin(a, frameWindow) }
	case "param", "param::entry":
		f = func(a uint64) bool { return inWin(a, paramWindow) }
	case "global":
		// "isspacep.global returns 1 for Kernel Function Parameters as
		// .param window is contained within the .global window"
		f = func(a uint64) bool {
			return !inWin(a, sharedWindow) && !inWin(a, localWindow) && !inWin(a, frameWindow)
		}
	case "const":
		mod := b.m
		f = func(a uint64) bool {
			for _, g := range mod.gorder {
				if g.v.sp == spConst && a-g.addr < uint64(len(g.mem)) {
					return true
				}
			}
			return false
		}
	default:
		return in, errf(ri.line, "%s: isspacep of .%s", ri.opcode, parts[1])
	}
	if err := b.nops(ri, 2); err != nil {
		return in, err
	}
	in.t = tPred
	in.f1 = func(a uint64) uint64 { return b2u(f(a)) }
	if _, t, ok := b.reg(ri.ops[0].name); !ok || t != tPred {
		return in, errf(ri.line, "%s: the destination must be a predicate", ri.opcode)
	}
	return b.alu(ri, in, 1, tU64)
}

// minmaxXorsignAbs is min.xorsign.abs.f32 and max.xorsign.abs.f32 as the
// ISA's semantics give them: the min (max) of |a| and |b|, with the sign
// bit the XOR of a's and b's unless the result is NaN.
//
//go:norace
func minmaxXorsignAbs(m mods, isMax bool) aluFns {
	nan := m.other["NaN"]
	return wrap32(m, 2, func(a, b, _ float32) float32 {
		neg := math.Signbit(float64(a)) != math.Signbit(float64(b))
		d := minmax(math.Abs(float64(a)), math.Abs(float64(b)), isMax, nan)
		if d != d {
			return float32(d)
		}
		if neg {
			d = -d
		}
		return float32(d)
	})
}

// int32Type reports whether t is .u32 or .s32.
func int32Type(t typ) bool { return t == tU32 || t == tS32 }

// dotFunc is dp4a's (dp2a's, when two) lane function: c plus the sum of
// the products of a's bytes (dp2a: half-words) and b's bytes (dp2a: the
// low or, when hi, the high two), each sign- or zero-extended by its
// type, as the ISA's semantics give it; the sum wraps at 32 bits.
//
//go:norace
func dotFunc(two, hi, aSigned, bSigned bool) func(a, b, c uint64) uint64 {
	field := func(v uint64, bitsN, i uint, sgn bool) int64 {
		x := v >> (bitsN * i) & (1<<bitsN - 1)
		if sgn && x>>(bitsN-1) == 1 {
			return int64(x) - 1<<bitsN
		}
		return int64(x)
	}
	return func(a, b, c uint64) uint64 {
		d := int64(uint32(c))
		if two {
			sel := uint(0)
			if hi {
				sel = 2
			}
			for i := uint(0); i < 2; i++ {
				d += field(a, 16, i, aSigned) * field(b, 8, sel+i, bSigned)
			}
		} else {
			for i := uint(0); i < 4; i++ {
				d += field(a, 8, i, aSigned) * field(b, 8, i, bSigned)
			}
		}
		return uint64(uint32(d))
	}
}

// bmsk is bmsk.b32 as the ISA's semantics give it: a mask of b bits from
// bit a; .clamp makes a or b of 32 or more mean "to the top", .wrap takes
// them modulo 32.
//
//go:norace
func bmsk(a, b uint32, clamp bool) uint32 {
	a1, b1 := a&0x1f, b&0x1f
	mask0 := uint32(0xffffffff) << a1
	sum := a1 + b1
	mask1 := uint32(0xffffffff) << (sum & 0x1f)
	overflow := sum >= 32
	if clamp && a >= 32 {
		overflow, mask0 = true, 0
	}
	if clamp && b >= 32 {
		overflow = true
	}
	switch {
	case overflow:
		mask1 = 0
	case b1 == 0:
		mask1 = 0xffffffff
	}
	return mask0 &^ mask1
}

// szext is szext.{u32,s32} as the ISA's semantics give it: a's low b bits
// zero- or sign-extended; b of 0 gives 0, b of 32 or more a (.clamp) or
// b mod 32 bits (.wrap).
//
//go:norace
func szext(a, b uint32, clamp, signed bool) uint32 {
	b1 := b & 0x1f
	tooLarge := clamp && b >= 32
	mask := uint32(0xffffffff) << b1
	if tooLarge {
		mask = 0
	}
	d := a &^ mask
	if signed && b1 != 0 && !tooLarge && a>>((b1-1)&0x1f)&1 == 1 {
		d |= mask
	}
	return d
}

// decodeVideo decodes the scalar video instructions vadd, vsub, vabsdiff,
// vmin and vmax in their plain form, vop.dtype.atype.btype{.sat} d, a, b:
// a and b sign- or zero-extended by their types, the operation computed
// exactly, and .sat clamping it to the range of dtype ("tmp =
// optSaturate(tmp, sat, isSigned(dtype), dsel)"); without .sat d is its
// low 32 bits. The secondary operation, the data merge and the operand
// selectors are refused.
func (b *builder) decodeVideo(ri rawInst, in inst, m mods, base string) (inst, error) {
	if len(m.types) != 3 || !int32Type(m.types[0]) || !int32Type(m.types[1]) || !int32Type(m.types[2]) {
		return in, errf(ri.line, "%s: %s takes three types of .u32 and .s32 (dtype, atype, btype)", ri.opcode, base)
	}
	if m.other["add"] || m.other["min"] || m.other["max"] || len(ri.ops) != 3 {
		return in, errf(ri.line, "%s: the secondary operation and the data merge of %s are not supported", ri.opcode, base)
	}
	for _, o := range ri.ops {
		if o.kind == roName && strings.Contains(o.name, ".") {
			return in, errf(ri.line, "%s: operand selectors (%s) are not supported", ri.opcode, o.name)
		}
	}
	if err := b.checkRegSizes(ri, []typ{tB32, tB32, tB32}, false); err != nil {
		return in, err
	}
	dSigned, aSigned, bSigned := m.types[0].signed(), m.types[1].signed(), m.types[2].signed()
	sat := m.sat
	ext := func(v uint64, sgn bool) int64 {
		if sgn {
			return int64(int32(v))
		}
		return int64(uint32(v))
	}
	in.f2 = func(a, b uint64) uint64 {
		ta, tb := ext(a, aSigned), ext(b, bSigned)
		var r int64
		switch base {
		case "vadd":
			r = ta + tb
		case "vsub":
			r = ta - tb
		case "vabsdiff":
			r = ta - tb
			if r < 0 {
				r = -r
			}
		case "vmin":
			r = min(ta, tb)
		default:
			r = max(ta, tb)
		}
		if sat {
			if dSigned {
				r = max(min(r, math.MaxInt32), math.MinInt32)
			} else {
				r = max(min(r, math.MaxUint32), 0)
			}
		}
		return uint64(uint32(r))
	}
	return b.aluT(ri, in, 2, m.types[1], m.types[2])
}
