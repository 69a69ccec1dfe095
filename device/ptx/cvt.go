package ptx

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// cvtOpts are what cvt's lane function needs beyond its modifiers.
type cvtOpts struct {
	relu, satFinite bool
	regBits         uint // the destination register's width, for sign extension
}

// cvtFunc returns cvt's lane function: m.types is (destination, source).
//
//go:norace
func cvtFunc(m mods) (fn aluFns, n int, ok bool, err error) {
	o := cvtOpts{satFinite: m.sat && m.other["satfinite"], relu: m.other["relu"]}
	return cvtFuncOpts(m, o)
}

//go:norace
func cvtFuncOpts(m mods, o cvtOpts) (fn aluFns, n int, ok bool, err error) {
	if len(m.types) != 2 {
		return fn, 0, true, fmt.Errorf("cvt needs two types")
	}
	dt, st := m.types[0], m.types[1]
	if dt == tF16x2 || dt == tBF16x2 || st == tF16x2 || st == tBF16x2 {
		return fn, 0, true, fmt.Errorf("packed cvt takes two .f32 sources: cvt.rn.%s.f32 d, a, b", typName(dt))
	}
	fn.srcT = st
	mode := m.rnd
	ftz, sat := m.ftz, m.sat && !o.satFinite
	dHalf := dt == tF16 || dt == tBF16
	if (o.relu || o.satFinite) && !dHalf {
		return fn, 0, true, fmt.Errorf(".relu and .satfinite need an .f16 or .bf16 destination")
	}
	if sat && dt == tBF16 {
		return fn, 0, true, fmt.Errorf(".sat is not defined for a .bf16 destination (.satfinite is)")
	}
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
			return fmtF16.toF64(uint16(v))
		case tBF16:
			return fmtBF16.toF64(uint16(v))
		}
		return 0
	}
	// toFloat rounds x + (tiny of sign e) once to the float destination in
	// md and applies .ftz, .sat, .relu and .satfinite; an .f64 destination
	// takes x as it is.
	var hf halfFmt
	if dHalf {
		hf = halfFmtOf(dt)
	}
	relu, satFin := o.relu, o.satFinite
	toFloat := func(x float64, e int, md uint8) uint64 {
		switch dt {
		case tF32:
			f := roundF32(x, e, md)
			if ftz {
				f = flush32(f)
			}
			if sat {
				f = saturate(f)
			}
			return bitsOf32(f)
		case tF64:
			if sat {
				x = saturate(x)
			}
			return bitsOf64(x)
		}
		return uint64(hf.finish(hf.round(x, e, md), false, sat, satFin, relu))
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
			if iv := int64(v); (st.signed() || iv >= 0) && iv < 1<<53 && iv > -(1<<53) {
				return toFloat(float64(iv), 0, mode) // exact in float64
			}
			z := new(big.Float)
			if st.signed() {
				z.SetInt64(int64(v))
			} else {
				z.SetUint64(v)
			}
			if dt == tF64 {
				return toFloat(bigRound(z, mode), 0, mode)
			}
			x, _ := z.Float64() // rounded to nearest: the error's sign below
			return toFloat(x, bigErrSign(z, x), mode)
		}
	case !dt.float() && st.float(): // float to integer: round, saturate, NaN as the ISA says
		if !m.intRnd {
			return fn, 0, true, fmt.Errorf("cvt from float to integer needs .rni, .rzi, .rmi or .rpi")
		}
		nanBits := floatToIntNaN(st, dt)
		fn.f1 = func(a uint64) uint64 {
			x := readF(a)
			if x != x {
				return nanBits
			}
			return floatToInt(roundInt(x, mode), dt)
		}
	default: // float to float
		// to .f32 from .f64 rounded in its mode (to nearest by default),
		// exactly from the others and after integer rounding
		md := mode
		if dt == tF32 && (md == rnDefault || m.intRnd) {
			md = rnNear
		}
		fn.f1 = func(a uint64) uint64 {
			x := readF(a)
			if m.intRnd {
				x = roundInt(x, mode)
			}
			return toFloat(x, 0, md)
		}
	}
	if dt.signed() && o.regBits > dt.bits() {
		// "The result of conversion is sign-extended to the destination
		// register width for signed integers"
		f, w := fn.f1, o.regBits
		sh := 64 - dt.bits()
		fn.f1 = func(a uint64) uint64 {
			v := uint64(int64(f(a)<<sh) >> sh)
			if w < 64 {
				v &= 1<<w - 1
			}
			return v
		}
	}
	return fn, 1, true, nil
}

// floatToIntNaN is what a NaN converts to: "Zero if source is not .f64
// and destination is not .s64, .u64. Otherwise 1 << (BitWidth(dst) - 1)".
//
//go:norace
func floatToIntNaN(st, dt typ) uint64 {
	if st != tF64 && dt.bits() != 64 {
		return 0
	}
	return uint64(1) << (dt.bits() - 1)
}

// cvtParts reports the modifiers of cvt's opcode that parseMods folds or keeps apart.
func cvtParts(opcode string) (satFinite, relu, rs bool) {
	for _, p := range strings.Split(opcode, ".")[1:] {
		switch p {
		case "satfinite":
			satFinite = true
		case "relu":
			relu = true
		case "rs", "rna":
			rs = true
		}
	}
	return
}

// decodeCvt decodes cvt: the scalar forms through cvtFuncOpts (with the
// destination register's width, as signed results are sign-extended to
// it), and the packed forms cvt.frnd2{.relu}{.satfinite}.{f16x2,bf16x2}.f32
// d, a, b: "the value converted from input a is stored in the upper half
// of d and the value converted from input b is stored in the lower half".
func (b *builder) decodeCvt(ri rawInst, in inst, m mods) (inst, error) {
	if m.other["pack"] {
		return b.decodeCvtPack(ri, in, m)
	}
	if len(m.types) != 2 {
		return in, errf(ri.line, "%s: cvt needs a destination and a source type", ri.opcode)
	}
	satFin, relu, rs := cvtParts(ri.opcode)
	if rs {
		return in, errf(ri.line, "%s: .rs and .rna rounding are not supported", ri.opcode)
	}
	dt, st := m.types[0], m.types[1]
	if dt == tF16x2 || dt == tBF16x2 {
		if st != tF32 {
			return in, errf(ri.line, "%s: packed cvt converts two .f32 sources", ri.opcode)
		}
		if m.rnd != rnNear && m.rnd != rnZero || m.intRnd {
			return in, errf(ri.line, "%s: packed cvt needs .rn or .rz", ri.opcode)
		}
		if m.sat && !satFin || m.ftz {
			return in, errf(ri.line, "%s: packed cvt takes .relu and .satfinite only", ri.opcode)
		}
		m1 := m
		m1.types = []typ{tF16, tF32}
		if dt == tBF16x2 {
			m1.types[0] = tBF16
		}
		one, _, _, err := cvtFuncOpts(m1, cvtOpts{relu: relu, satFinite: satFin})
		if err != nil {
			return in, errf(ri.line, "%s: %v", ri.opcode, err)
		}
		g := one.f1
		in.f2 = func(a, b uint64) uint64 { return g(a)<<16 | g(b) }
		if err := b.checkRegSizes(ri, []typ{dt, tF32, tF32}, false); err != nil {
			return in, err
		}
		return b.aluT(ri, in, 2, tF32, tNone)
	}
	o := cvtOpts{relu: relu, satFinite: satFin}
	if len(ri.ops) > 0 && ri.ops[0].kind == roName {
		if _, rt, ok := b.reg(ri.ops[0].name); ok && rt != tPred {
			o.regBits = rt.bits()
		}
	}
	fn, n, _, err := cvtFuncOpts(m, o)
	if err != nil {
		return in, errf(ri.line, "%s: %v", ri.opcode, err)
	}
	in.f1 = fn.f1
	if err := b.checkRegSizes(ri, []typ{dt, st}, true); err != nil {
		return in, err
	}
	return b.aluT(ri, in, n, fn.srcT, tNone)
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

// floatToInt converts an integral float to t, saturating (a NaN gives 0:
// the callers give floatToIntNaN).
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
func f32ToF16(f float32, mode uint8) uint16 { return fmtF16.round(float64(f), 0, mode) }

// f16ToF32 converts IEEE half precision to f32 (exactly).
//
//go:norace
func f16ToF32(h uint16) float32 { return float32(fmtF16.toF64(h)) }

// packTypes are cvt.pack's convert types: their width in bits, and
// whether they are signed.
var packTypes = map[string]struct {
	bits   uint
	signed bool
}{"u2": {2, false}, "s2": {2, true}, "u4": {4, false}, "s4": {4, true},
	"u8": {8, false}, "s8": {8, true}, "u16": {16, false}, "s16": {16, true}}

// decodeCvtPack decodes cvt.pack.sat.convertType.s32 d, a, b (.u16 and
// .s16) and cvt.pack.sat.convertType.s32.b32 d, a, b, c (.u2, .s2, .u4,
// .s4, .u8, .s8): a and b saturated to convertType, b in d's lowest bits,
// a above it, and for the second form c's low bits above both, as the
// ISA's semantics give it.
func (b *builder) decodeCvtPack(ri rawInst, in inst, m mods) (inst, error) {
	parts := strings.Split(ri.opcode, ".")[1:]
	// pack, sat, convertType, abType [, cType]
	if len(parts) < 4 || parts[0] != "pack" || parts[1] != "sat" || parts[3] != "s32" {
		return in, errf(ri.line, "%s: cvt.pack is cvt.pack.sat.convertType.s32{.b32}", ri.opcode)
	}
	pt, ok := packTypes[parts[2]]
	if !ok {
		return in, errf(ri.line, "%s: cvt.pack's convertType is .u2, .s2, .u4, .s4, .u8, .s8, .u16 or .s16", ri.opcode)
	}
	withC := pt.bits < 16
	if withC && (len(parts) != 5 || parts[4] != "b32") || !withC && len(parts) != 4 {
		return in, errf(ri.line, "%s: cvt.pack.sat.%s takes %s", ri.opcode, parts[2],
			map[bool]string{true: "a .b32 cType: cvt.pack.sat.convertType.s32.b32 d, a, b, c", false: "no cType: cvt.pack.sat.convertType.s32 d, a, b"}[withC])
	}
	lo, hi := int64(0), int64(1)<<pt.bits-1
	if pt.signed {
		lo, hi = -(int64(1) << (pt.bits - 1)), int64(1)<<(pt.bits-1)-1
	}
	n := pt.bits
	mask := uint64(1)<<n - 1
	sat := func(v uint64) uint64 { return uint64(max(min(int64(int32(v)), hi), lo)) & mask }
	pack := func(a, b uint64) uint64 { return sat(b) | sat(a)<<n }
	types := []typ{tB32, tS32, tS32}
	if withC {
		types = append(types, tB32)
		in.f3 = func(a, b, c uint64) uint64 { return uint64(uint32(pack(a, b) | c<<(2*n))) }
	} else {
		in.f2 = pack
	}
	if err := b.checkRegSizes(ri, types, false); err != nil {
		return in, err
	}
	if withC {
		return b.aluT(ri, in, 3, tS32, tB32)
	}
	return b.aluT(ri, in, 2, tS32, tNone)
}
