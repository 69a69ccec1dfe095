package isacases

import (
	"fmt"
	"math"
	"math/big"
)

// Instructions and forms the classes' own files do not reach: the
// integer dot products, mad24, bmsk and szext, prmt's modes, copysign,
// min/max of zeros, carry chains, tanh, predicate logic, and the memory
// ordering and hint instructions that are no-ops on one device.

const (
	isaDp4a       = "dp4a: Four-way byte dot product which is accumulated in 32-bit result. d = c; Va = extractAndSignOrZeroExt_4(a, .atype); Vb = extractAndSignOrZeroExt_4(b, .btype); for (i = 0; i < 4; ++i) d += Va[i] * Vb[i]."
	isaDp2a       = "dp2a: Two-way 16-bit to 8-bit dot product which is accumulated in 32-bit result. Va = extractAndSignOrZeroExt_2(a, .atype); Vb = extractAndSignOrZeroExt_4(b, .btype); b_select = (.mode == .lo) ? 0 : 2; for (i = 0; i < 2; ++i) d += Va[i] * Vb[b_select + i]."
	isaMad24      = "mad24: Compute the product of two 24-bit integer values held in 32-bit source registers, and add a third, 32-bit value to either the high or low 32-bits of the 48-bit result: t = a * b; d = t<47..16> + c (.hi), d = t<31..0> + c (.lo)."
	isaMad24Sat   = "mad24.hi.sat.s32: The saturation modifier .sat limits result to MININT..MAXINT (no overflow) for the size of the operation. Applies only to .s32 type in .hi mode."
	isaBmsk       = "bmsk: Generates a 32-bit mask starting from the bit position specified in operand a, and of the width specified in operand b. a1 = a & 0x1f; mask0 = (~0) << a1; b1 = b & 0x1f; sum = a1 + b1; mask1 = (~0) << sum; .clamp: a >= 32 gives mask0 = 0, b >= 32 a bit-width overflow; if (sum >= 32 || overflow) mask1 = 0; else if (b1 == 0) mask1 = ~0; d = mask0 & ~mask1."
	isaSzext      = "szext: Sign-extends or zero-extends an N-bit value from operand a where N is specified in operand b. b1 = b & 0x1f; too_large = (b >= 32 && .mode == .clamp); mask = too_large ? 0 : (~0) << b1; sign_pos = (b1 - 1) & 0x1f; sign_bit = (b1 == 0 || too_large || .type != .s32) ? 0 : (a >> sign_pos) & 1; d = (a & ~mask) | (sign_bit ? mask : 0)."
	isaPrmtMode   = "prmt.b32.mode: the f4e (forward 4 extract), b4e (backward 4 extract), rc8 (replicate 8), ecl (edge clamp left), ecr (edge clamp right) and rc16 (replicate 16) modes pick the bytes of d from {b, a} by the table of the mode and c[1:0]."
	isaCopysign   = "copysign: Copy sign bit of a into value of b, and return the result as d."
	isaMinZero    = "min/max (floating point): z = (x < y) ? x : y (z = (x > y) ? x : y); note: -0.0 < +0.0 here. If .NaN modifier is specified, then the result is canonical NaN if any of the inputs is NaN; otherwise a NaN input gives the other input."
	isaCarry      = "add.cc, addc{.cc}, sub.cc, subc{.cc}: add or subtract with carry-out written to CC.CF and carry-in (borrow-in) CC.CF: addc: d = a + b + CC.CF; subc: d = a - (b + CC.CF). Multi-word additions and subtractions chain them."
	isaMadCarry   = "mad.cc, madc: Multiplies two values, extracts either the high or low part of the result, and adds a third value along with carry-in (madc), writing the carry-out to CC.CF (.cc): t = a * b; d = t<63..32> + c + CC.CF (.hi), t<31..0> + c + CC.CF (.lo)."
	isaTanh       = "tanh.approx.f32: tanh(+0) = +0, tanh(-0) = -0, tanh(+Inf) = +1.0, tanh(-Inf) = -1.0, tanh(NaN) = NaN."
	isaPredLogic  = "and, or, xor, not on .pred operands: the logical operation on the predicate values."
	isaNoOp       = "membar, fence, prefetch, prefetchu: memory ordering and cache hints; they do not change any value a thread reads or writes on one device."
	isaLaneRegs   = "%laneid: the thread's lane within the warp (0..31); %lanemask_eq, %lanemask_lt, %lanemask_le, %lanemask_gt, %lanemask_ge: 32-bit masks of the lanes equal to, below, up to, above, from the thread's lane."
	isaCvtaLocal  = "cvta: Convert an address between the generic and a state space: cvta.to.local of cvta.local gives back the .local address."
	isaSetpPair   = "setp: Compares two values and combines the result with another predicate value by applying a Boolean operator; p = (a CmpOp b); q = !(a CmpOp b) when the destination is written p|q."
	isaMovPack    = "mov: pack scalar elements into a wider destination or unpack one into scalars: mov.b64 d, {lo, hi} and mov.b64 {lo, hi}, a (the first element in the least significant bits)."
	isaPredExec   = "Predicated execution: @{!}p instruction; the instruction runs in the threads where the guard predicate is True (with !, False)."
	isaIntLit     = "Integer constants: hexadecimal 0[xX]hexdigit+, octal 0octitdigit+, binary 0[bB]bit+, decimal; a U suffix makes the literal unsigned."
	isaSreg       = "%ntid, %nctaid, %ctaid: the CTA's dimensions, the grid's dimensions, the CTA's index in the grid; %nwarpid: the maximum number of warp identifiers; %nsmid, %smid: the SM identifier is less than %nsmid."
	isaAddrOff    = "Addresses as operands: [reg+imm] where imm is a signed 32-bit offset, [reg+-imm] a negative one."
	isaCvtRniF64  = "cvt.rni, .rzi, .rmi, .rpi for float-to-float of the same size: round to the nearest integer, choosing even on a tie; towards zero; towards -infinity; towards +infinity."
	isaVoteHalf   = "vote.sync.ballot.b32: d is set to a mask in which bit i is the predicate a of lane i, for the threads in membermask; lanes not in membermask give 0 bits."
	isaBarWarp    = "bar.warp.sync: causes the executing thread to wait until all threads corresponding to membermask have executed a bar.warp.sync with the same membermask value before resuming execution; it also guarantees memory ordering among the threads."
	isaCvtPack    = "cvt.pack: Convert two 32-bit integers a and b into specified type and pack the results into d. The inputs a and b are converted to values of type specified by .convertType with saturation and the results after conversion are packed into lower bits of d (tb in bits size-1..0, ta in bits 2*size-1..size). If operand c is specified then remaining bits of d are copied from lower bits of c."
	isaVideo      = "Scalar video instructions (vadd, vsub, vabsdiff, vmin, vmax): extract and sign- or zero-extend the source operands to produce signed 33-bit input values; perform a scalar arithmetic operation to produce a signed 34-bit result (tmp = ta + tb, ta - tb, |ta - tb|, MIN(ta, tb), MAX(ta, tb)); optionally clamp the result to the range of the destination type."
	isaHalfArith  = "Half precision add, sub, mul, fma (.f16, .f16x2; fma also .bf16, .bf16x2): d = a + b (a - b, a * b, a * b + c) computed exactly and rounded once; .rn mantissa LSB rounds to nearest even. For .f16x2 and .bf16x2 the operation is applied to each half-word element."
	isaHalfSat    = "Half precision .sat: clamps the result to [0.0, 1.0]. NaN results are flushed to +0.0f. .ftz: subnormal inputs and results are flushed to sign-preserving zero. fma .relu: clamps the result to 0 if negative."
	isaHalfMin    = "Half precision min/max: if one input is NaN the result is the other input; if both are NaN, or with .NaN either is, the result is canonical NaN; -0.0 < +0.0."
	isaCas16      = "atom.cas.b16: a 16-bit compare-and-swap: (*a == b) ? c : *a stored at the 2-byte aligned location a; d gets the old value; the neighbouring bytes are not written."
	isaGenAtom    = "atom and red without a state space use generic addressing: a generic address of shared memory accesses the shared location."
	isaLocal      = ".local memory is private to each thread."
	isaCvtOnce    = "cvt: a float-to-float or integer-to-float conversion rounds the source's exact value once, in the rounding mode given (.rn, .rz, .rm, .rp); an out-of-range result is an infinity or the largest finite value as the mode says."
	isaCvtHalfInt = "cvt from .f16 to an integer: .rni, .rzi, .rmi, .rpi round to an integer; the result saturates to the destination type's range."
	isaHalfSetp   = "setp with .f16x2 or .bf16x2: the comparison of the lower halves is written to p and of the upper halves to q: setp.CmpOp.f16x2 p|q, a, b."
	isaHalfBits   = "neg and abs of .f16, .f16x2, .bf16, .bf16x2: negate the sign / take the absolute value of each half-word element."
	isaLdu        = "ldu: Load read-only data from an address that is common across all threads in the warp: d = a (the value in memory)."
)

// dot is dp4a's and dp2a's byte or half extraction: the n-bit fields of
// v, sign- or zero-extended.
func dotFields(v uint64, n int, sgn bool) []int64 {
	var out []int64
	for i := 0; i < 32/n; i++ {
		out = append(out, int64(extend(v>>(n*i)&mask(n), n, sgn)))
	}
	return out
}

func formCases() []Case {
	var cs []Case
	i := func(class, name, isa, insn, d string, s []string, in []uint64, want uint64) {
		cs = append(cs, ins(class, name, isa, insn, d, s, in, want))
	}
	// dp4a and dp2a, every signedness combination
	da, db, dc := uint64(0x80ff7f02), uint64(0xfe817f03), uint64(0xfffffff6) // c = -10 as .s32
	for _, at := range []string{"u32", "s32"} {
		for _, bt := range []string{"u32", "s32"} {
			ct := "s32"
			if at == "u32" && bt == "u32" {
				ct = "u32"
			}
			va, vb := dotFields(da, 8, at == "s32"), dotFields(db, 8, bt == "s32")
			d := int64(int32(dc))
			if ct == "u32" {
				d = int64(dc)
			}
			for k := 0; k < 4; k++ {
				d += va[k] * vb[k]
			}
			i("int", "dp4a."+at+"."+bt, isaDp4a, "dp4a."+at+"."+bt+" %d, %a, %b, %c", "b32", []string{"b32", "b32", "b32"}, []uint64{da, db, dc}, uint64(d)&mask(32))
			for _, mode := range []string{"lo", "hi"} {
				va := dotFields(da, 16, at == "s32")
				sel := 0
				if mode == "hi" {
					sel = 2
				}
				d := int64(int32(dc))
				if ct == "u32" {
					d = int64(dc)
				}
				for k := 0; k < 2; k++ {
					d += va[k] * vb[sel+k]
				}
				i("int", "dp2a."+mode+"."+at+"."+bt, isaDp2a, "dp2a."+mode+"."+at+"."+bt+" %d, %a, %b, %c", "b32", []string{"b32", "b32", "b32"}, []uint64{da, db, dc}, uint64(d)&mask(32))
			}
		}
	}
	// mad24 and mul24: the 48-bit product of the low 24 bits
	m24 := func(a, b uint64, sgn bool) int64 {
		return int64(extend(a&mask(24), 24, sgn)) * int64(extend(b&mask(24), 24, sgn))
	}
	x24, y24, c24 := uint64(0xab876543), uint64(0x12fedcba), uint64(0x00001000) // high bytes ignored
	for _, t := range []string{"u32", "s32"} {
		sg := t == "s32"
		p := m24(x24, y24, sg)
		tt := []string{t, t, t}
		i("int", "mad24.lo."+t, isaMad24, "mad24.lo."+t+" %d, %a, %b, %c", t, tt, []uint64{x24, y24, c24}, uint64(p+int64(c24))&mask(32))
		i("int", "mad24.hi."+t, isaMad24, "mad24.hi."+t+" %d, %a, %b, %c", t, tt, []uint64{x24, y24, c24}, (uint64(p)>>16+c24)&mask(32))
		i("int", "mul24.hi."+t+" high bytes ignored", isaMul24, "mul24.hi."+t+" %d, %a, %b", t, tt[:2], []uint64{x24, y24}, uint64(p)>>16&mask(32))
	}
	// mad24.hi.sat.s32: -2^23 * -2^23 = 2^46, t<47..16> = 2^30; + 2^30 + 2^30 overflows
	sat := func(v int64) uint64 { return uint64(max(min(v, math.MaxInt32), math.MinInt32)) & mask(32) }
	for _, c := range []struct {
		name    string
		a, b, c uint64
	}{
		{"overflow", 0x800000, 0x800000, 0x7fffffff},
		{"underflow", 0x800000, 0x7fffff, 0x80000000},
		{"in range", 0xfff000, 0x001000, 5},
	} {
		hi := m24(c.a, c.b, true) >> 16
		i("int", "mad24.hi.sat.s32 "+c.name, isaMad24Sat, "mad24.hi.sat.s32 %d, %a, %b, %c", "s32", []string{"s32", "s32", "s32"}, []uint64{c.a, c.b, c.c},
			sat(hi+int64(int32(c.c))))
	}
	// bmsk and szext
	bmsk := func(a, b uint64, clamp bool) uint64 {
		a1, b1 := a&0x1f, b&0x1f
		mask0 := uint64(0xffffffff) << a1 & mask(32)
		sum := a1 + b1
		mask1 := uint64(0xffffffff) << sum & mask(32)
		over := sum >= 32
		if clamp {
			if a >= 32 {
				over = true
				mask0 = 0
			}
			if b >= 32 {
				over = true
			}
		}
		if over {
			mask1 = 0
		} else if b1 == 0 {
			mask1 = mask(32)
		}
		return mask0 &^ mask1 & mask(32)
	}
	for _, ab := range [][2]uint64{{1, 2}, {0, 0}, {0, 32}, {4, 30}, {33, 3}, {31, 1}, {8, 40}, {40, 8}} {
		for _, mode := range []string{"clamp", "wrap"} {
			i("bit", fmt.Sprintf("bmsk.%s.b32 %d, %d", mode, ab[0], ab[1]), isaBmsk, "bmsk."+mode+".b32 %d, %a, %b", "b32", []string{"b32", "u32"},
				[]uint64{ab[0], ab[1]}, bmsk(ab[0], ab[1], mode == "clamp"))
		}
	}
	szext := func(a, b uint64, clamp, sgn bool) uint64 {
		b1 := b & 0x1f
		tooLarge := b >= 32 && clamp
		m := uint64(0xffffffff) << b1 & mask(32)
		if tooLarge {
			m = 0
		}
		signPos := (b1 - 1) & 0x1f
		var sbit uint64
		if b1 != 0 && !tooLarge && sgn {
			sbit = a >> signPos & 1
		}
		d := a &^ m
		if sbit == 1 {
			d |= m
		}
		return d & mask(32)
	}
	for _, ab := range [][2]uint64{{0xffffffff, 0}, {0x000000f0, 8}, {0x00000070, 8}, {0x12345678, 16}, {0x87654321, 32}, {0x87654321, 33}, {0x000000ff, 1}} {
		for _, mode := range []string{"clamp", "wrap"} {
			for _, t := range []string{"u32", "s32"} {
				i("bit", fmt.Sprintf("szext.%s.%s %#x, %d", mode, t, ab[0], ab[1]), isaSzext, "szext."+mode+"."+t+" %d, %a, %b", t, []string{t, "u32"},
					[]uint64{ab[0], ab[1]}, szext(ab[0], ab[1], mode == "clamp", t == "s32"))
			}
		}
	}
	// prmt's modes: the ISA's table, d.b3 d.b2 d.b1 d.b0 for c[1:0] = 0..3
	modes := []struct {
		name string
		tab  [4][4]int
	}{
		{"f4e", [4][4]int{{3, 2, 1, 0}, {4, 3, 2, 1}, {5, 4, 3, 2}, {6, 5, 4, 3}}},
		{"b4e", [4][4]int{{5, 6, 7, 0}, {6, 7, 0, 1}, {7, 0, 1, 2}, {0, 1, 2, 3}}},
		{"rc8", [4][4]int{{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}}},
		{"ecl", [4][4]int{{3, 2, 1, 0}, {3, 2, 1, 1}, {3, 2, 2, 2}, {3, 3, 3, 3}}},
		{"ecr", [4][4]int{{0, 0, 0, 0}, {1, 1, 1, 0}, {2, 2, 1, 0}, {3, 2, 1, 0}}},
		{"rc16", [4][4]int{{1, 0, 1, 0}, {3, 2, 3, 2}, {1, 0, 1, 0}, {3, 2, 3, 2}}},
	}
	pa, pb := uint64(0x33221100), uint64(0x77665544) // byte k of {b, a} is 0x11*k
	for _, md := range modes {
		for sel := 0; sel < 4; sel++ {
			var want uint64
			for k, src := range md.tab[sel] { // k = 0 is d.b3
				want |= uint64(0x11*src) << (8 * (3 - k))
			}
			c := uint64(sel) | 0xfc // c's other bits are ignored
			i("bit", fmt.Sprintf("prmt.b32.%s c=%d", md.name, sel), isaPrmtMode, "prmt.b32."+md.name+" %d, %a, %b, %c", "b32", []string{"b32", "b32", "b32"},
				[]uint64{pa, pb, c}, want)
		}
	}
	// copysign
	i("float", "copysign.f32 -0 to 1.5", isaCopysign, "copysign.f32 %d, %a, %b", "f32", []string{"f32", "f32"}, []uint64{b32(float32(math.Copysign(0, -1))), b32(1.5)}, b32(-1.5))
	i("float", "copysign.f32 + to -Inf", isaCopysign, "copysign.f32 %d, %a, %b", "f32", []string{"f32", "f32"}, []uint64{b32(2), b32(float32(math.Inf(-1)))}, b32(float32(math.Inf(1))))
	i("float", "copysign.f32 - to a NaN", isaCopysign, "copysign.f32 %d, %a, %b", "f32", []string{"f32", "f32"}, []uint64{b32(-2), 0x7fc00123}, 0xffc00123)
	i("float", "copysign.f64 - to 3", isaCopysign, "copysign.f64 %d, %a, %b", "f64", []string{"f64", "f64"}, []uint64{b64(-7), b64(3)}, b64(-3))
	i("float", "copysign.f64 + to -0", isaCopysign, "copysign.f64 %d, %a, %b", "f64", []string{"f64", "f64"}, []uint64{b64(5), b64(math.Copysign(0, -1))}, 0)
	// min/max of zeros and NaNs
	nz32, nz64 := b32(float32(math.Copysign(0, -1))), b64(math.Copysign(0, -1))
	for _, t := range []string{"f32", "f64"} {
		nz, pz := nz32, uint64(0)
		one := b32(1)
		if t == "f64" {
			nz, one = nz64, b64(1)
		}
		tt := []string{t, t}
		i("float", "min."+t+" +0, -0", isaMinZero, "min."+t+" %d, %a, %b", t, tt, []uint64{pz, nz}, nz)
		i("float", "min."+t+" -0, +0", isaMinZero, "min."+t+" %d, %a, %b", t, tt, []uint64{nz, pz}, nz)
		i("float", "max."+t+" -0, +0", isaMinZero, "max."+t+" %d, %a, %b", t, tt, []uint64{nz, pz}, pz)
		i("float", "max."+t+" +0, -0", isaMinZero, "max."+t+" %d, %a, %b", t, tt, []uint64{pz, nz}, pz)
		nan := uint64(0x7fc00000)
		if t == "f64" {
			nan = 0x7ff8000000000000
		}
		i("float", "max."+t+" NaN, 1", isaMinZero, "max."+t+" %d, %a, %b", t, tt, []uint64{nan, one}, one)
	}
	i("float", "max.NaN.f32 1, NaN", isaMinZero, "max.NaN.f32 %d, %a, %b", "f32", []string{"f32", "f32"}, []uint64{b32(1), 0xffc00001}, 0x7fffffff)
	i("float", "max.NaN.f32 -0, +0", isaMinZero, "max.NaN.f32 %d, %a, %b", "f32", []string{"f32", "f32"}, []uint64{nz32, 0}, 0)
	i("float", "min.NaN.f32 +0, -0", isaMinZero, "min.NaN.f32 %d, %a, %b", "f32", []string{"f32", "f32"}, []uint64{0, nz32}, nz32)
	// tanh.approx.f32's special values
	for _, c := range []struct {
		name   string
		a, out uint64
	}{
		{"+0", 0, 0}, {"-0", nz32, nz32}, {"+Inf", b32(float32(math.Inf(1))), b32(1)}, {"-Inf", b32(float32(math.Inf(-1))), b32(-1)},
	} {
		i("approx", "tanh.approx.f32 "+c.name, isaTanh, "tanh.approx.f32 %d, %a", "f32", []string{"f32"}, []uint64{c.a}, c.out)
	}
	body := func(class, name, isa, body string, in []uint64, size int, want ...uint64) {
		cs = append(cs, Case{Name: class + "/" + name, Class: class, ISA: isa, Body: body, In: in, Size: size, Want: want})
	}
	// carry chains: 128-bit add and subtract in 32-bit and 64-bit words
	x128 := [2]uint64{0xffffffff_fffffffe, 0x00000001_ffffffff} // low, high
	y128 := [2]uint64{0x00000000_00000003, 0xffffffff_00000001}
	lo, carry := x128[0]+y128[0], uint64(0)
	if lo < x128[0] {
		carry = 1
	}
	hi := x128[1] + y128[1] + carry
	body("int", "add.cc.u64 addc.u64 128-bit", isaCarry,
		"ld.global.u64 %rd1, [%in];\nld.global.u64 %rd2, [%in+8];\nld.global.u64 %rd3, [%in+16];\nld.global.u64 %rd4, [%in+24];\n"+
			"add.cc.u64 %rd5, %rd1, %rd3;\naddc.u64 %rd6, %rd2, %rd4;\nst.global.u64 [%out], %rd5;\nst.global.u64 [%out+8], %rd6;",
		[]uint64{x128[0], x128[1], y128[0], y128[1]}, 8, lo, hi)
	var w4 [4]uint64
	var cf uint64
	for k := 0; k < 4; k++ {
		xa, yb := x128[k/2]>>(32*(k%2))&mask(32), y128[k/2]>>(32*(k%2))&mask(32)
		s := xa + yb + cf
		w4[k], cf = s&mask(32), s>>32
	}
	body("int", "add.cc.u32 addc.cc.u32 addc.u32 128-bit", isaCarry,
		"ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%in];\nld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%in+16];\n"+
			"add.cc.u32 %r9, %r1, %r5;\naddc.cc.u32 %r10, %r2, %r6;\naddc.cc.u32 %r11, %r3, %r7;\naddc.u32 %r12, %r4, %r8;\n"+
			"st.global.v2.u32 [%out], {%r9, %r10};\nst.global.v2.u32 [%out+8], {%r11, %r12};",
		[]uint64{x128[0], x128[1], y128[0], y128[1]}, 8, w4[1]<<32|w4[0], w4[3]<<32|w4[2])
	// subtraction: y - x with borrows
	slo := y128[0] - x128[0]
	var borrow uint64
	if y128[0] < x128[0] {
		borrow = 1
	}
	shi := y128[1] - (x128[1] + borrow)
	body("int", "sub.cc.u64 subc.u64 128-bit", isaCarry,
		"ld.global.u64 %rd1, [%in];\nld.global.u64 %rd2, [%in+8];\nld.global.u64 %rd3, [%in+16];\nld.global.u64 %rd4, [%in+24];\n"+
			"sub.cc.u64 %rd5, %rd3, %rd1;\nsubc.u64 %rd6, %rd4, %rd2;\nst.global.u64 [%out], %rd5;\nst.global.u64 [%out+8], %rd6;",
		[]uint64{x128[0], x128[1], y128[0], y128[1]}, 8, slo, shi)
	var d4 [4]uint64
	var bf uint64
	for k := 0; k < 4; k++ {
		ya, xb := y128[k/2]>>(32*(k%2))&mask(32), x128[k/2]>>(32*(k%2))&mask(32)
		d := ya - xb - bf
		d4[k], bf = d&mask(32), d>>63
	}
	body("int", "sub.cc.u32 subc.cc.u32 subc.u32 128-bit", isaCarry,
		"ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%in];\nld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%in+16];\n"+
			"sub.cc.u32 %r9, %r5, %r1;\nsubc.cc.u32 %r10, %r6, %r2;\nsubc.cc.u32 %r11, %r7, %r3;\nsubc.u32 %r12, %r8, %r4;\n"+
			"st.global.v2.u32 [%out], {%r9, %r10};\nst.global.v2.u32 [%out+8], {%r11, %r12};",
		[]uint64{x128[0], x128[1], y128[0], y128[1]}, 8, d4[1]<<32|d4[0], d4[3]<<32|d4[2])
	// mad.lo.cc then madc.hi: a*b + c as 64 bits from 32-bit halves
	ma, mb, mc := uint64(0xfedcba98), uint64(0x89abcdef), uint64(0xffffffff_fffffff0)
	full := ma*mb + mc
	body("int", "mad.lo.cc.u32 madc.hi.u32", isaMadCarry,
		"ld.global.u32 %r1, [%in];\nld.global.u32 %r2, [%in+8];\nld.global.v2.u32 {%r3, %r4}, [%in+16];\n"+
			"mad.lo.cc.u32 %r5, %r1, %r2, %r3;\nmadc.hi.u32 %r6, %r1, %r2, %r4;\nst.global.v2.u32 [%out], {%r5, %r6};",
		[]uint64{ma, mb, mc}, 8, full)
	// predicate logic
	for _, c := range []struct{ op, name string }{{"xor", "xor.pred"}, {"and", "and.pred"}, {"or", "or.pred"}} {
		var want uint64
		for k := 0; k < 4; k++ {
			p, q := k&1 == 1, k&2 == 2
			var r bool
			switch c.op {
			case "xor":
				r = p != q
			case "and":
				r = p && q
			default:
				r = p || q
			}
			if r {
				want |= 1 << k
			}
		}
		var b string
		for k := 0; k < 4; k++ {
			b += fmt.Sprintf("mov.u32 %%r5, %d;\nmov.u32 %%r6, %d;\nsetp.ne.u32 %%p1, %%r5, 0;\nsetp.ne.u32 %%p2, %%r6, 0;\n%s %%p3, %%p1, %%p2;\nselp.u32 %%r%d, %d, 0, %%p3;\n", k&1, k>>1&1, c.name, k+1, 1<<k)
		}
		b += "or.b32 %r1, %r1, %r2;\nor.b32 %r1, %r1, %r3;\nor.b32 %r1, %r1, %r4;\nst.global.u32 [%out], %r1;"
		body("compare", c.name+" truth table", isaPredLogic, b, nil, 4, want)
	}
	body("compare", "not.pred", isaPredLogic, "setp.eq.u32 %p1, %t, 0;\nnot.pred %p2, %p1;\nnot.pred %p3, %p2;\nselp.u32 %r1, 2, 0, %p2;\nselp.u32 %r2, 1, 0, %p3;\nor.b32 %r1, %r1, %r2;\nst.global.u32 [%out], %r1;", nil, 4, 1)
	// no-ops on one device, and ldu
	body("memory", "membar fence prefetch", isaNoOp,
		"ld.global.u32 %r1, [%in];\nmembar.gl;\nmembar.cta;\nmembar.sys;\nfence.sc.gpu;\nfence.acq_rel.cta;\nfence.proxy.alias;\n"+
			"prefetch.global.L2 [%in];\nprefetch.global.L1 [%in];\nprefetchu.L1 [%in];\nst.global.u32 [%out], %r1;\nfence.sc.sys;\nld.global.u32 %r2, [%out];\nst.global.u32 [%out+8], %r2;",
		[]uint64{0x12345678}, 4, 0x12345678, 0x12345678)
	body("memory", "ldu.global.u32", isaLdu, "ldu.global.u32 %r1, [%in+8];\nst.global.u32 [%out], %r1;", []uint64{1, 0xcafe}, 4, 0xcafe)
	body("memory", "ldu.global.v2.u64", isaLdu+" "+isaLdVec, "ldu.global.v2.u64 {%rd1, %rd2}, [%in];\nst.global.u64 [%out], %rd2;\nst.global.u64 [%out+8], %rd1;", []uint64{3, 4}, 8, 4, 3)
	body("memory", "ld.global.nc.v2.u32", isaLdVec, "ld.global.nc.v2.u32 {%r1, %r2}, [%in];\nst.global.u32 [%out], %r2;", []uint64{0x11111111_22222222}, 4, 0x11111111)
	body("memory", "cvta.to.local of cvta.local", isaCvtaLocal,
		".local .align 8 .b8 buf[16];\nmov.u64 %rd9, buf;\ncvta.local.u64 %rd1, %rd9;\ncvta.to.local.u64 %rd2, %rd1;\nst.local.u32 [%rd2+4], 66;\nld.local.u32 %r1, [%rd9+4];\nsetp.eq.u64 %p1, %rd2, %rd9;\nselp.u32 %r2, 1000, 0, %p1;\nadd.u32 %r1, %r1, %r2;\nst.global.u32 [%out], %r1;",
		nil, 4, 1066)
	// setp's p|q, predicated execution, mov pack and unpack, literals
	body("compare", "setp p|q", isaSetpPair,
		"setp.lt.s32 %p1|%p2, %t, 1;\nselp.u32 %r1, 1, 0, %p1;\nselp.u32 %r2, 2, 0, %p2;\nsetp.gt.s32 %p3|%p4, %t, 1;\nselp.u32 %r3, 4, 0, %p3;\nselp.u32 %r4, 8, 0, %p4;\n"+
			"or.b32 %r1, %r1, %r2;\nor.b32 %r1, %r1, %r3;\nor.b32 %r1, %r1, %r4;\nst.global.u32 [%out], %r1;", nil, 4, 1|8)
	body("compare", "@!p and @p", isaPredExec,
		"mov.u32 %r1, 5;\nsetp.eq.u32 %p1, %t, 0;\n@!%p1 mov.u32 %r1, 7;\n@%p1 add.u32 %r1, %r1, 100;\nst.global.u32 [%out], %r1;", nil, 4, 105)
	body("memory", "mov.b64 pack and unpack", isaMovPack,
		"mov.u32 %r1, 0x89abcdef;\nmov.u32 %r2, 0x01234567;\nmov.b64 %rd1, {%r1, %r2};\nmov.b64 {%r3, %r4}, %rd1;\nmov.b32 {%h1, %h2}, %r3;\nmov.b32 %r5, {%h2, %h1};\n"+
			"st.global.u64 [%out], %rd1;\nst.global.u32 [%out+8], %r5;\nst.global.u32 [%out+16], %r4;", nil, 8, 0x01234567_89abcdef, 0xa5a5a5a5_cdef89ab, 0xa5a5a5a5_01234567)
	body("int", "integer literals", isaIntLit,
		"mov.u32 %r1, 010;\nmov.u32 %r2, 0b101;\nmov.u32 %r3, 0X1f;\nmov.u32 %r4, 7U;\nmul.lo.u32 %r1, %r1, 1000;\nmad.lo.u32 %r1, %r2, 100, %r1;\nadd.u32 %r1, %r1, %r3;\nadd.u32 %r1, %r1, %r4;\nst.global.u32 [%out], %r1;",
		nil, 4, 8*1000+5*100+31+7)
	body("memory", "ld.global with a negative offset", isaAddrOff,
		"add.u64 %rd1, %in, 16;\nld.global.u32 %r1, [%rd1+-12];\nld.global.u32 %r2, [%rd1-8];\nst.global.u32 [%out], %r1;\nst.global.u32 [%out+8], %r2;", []uint64{0x11111111_22222222, 0x33333333_44444444}, 4, 0x11111111, 0x44444444)
	body("memory", "%ntid %nctaid %ctaid %nwarpid %smid", isaSreg,
		"mov.u32 %r1, %ntid.x;\nmov.u32 %r2, %ntid.y;\nmov.u32 %r3, %nctaid.x;\nmov.u32 %r4, %ctaid.x;\nmov.u32 %r5, %nwarpid;\nmov.u32 %r6, %smid;\nmov.u32 %r7, %nsmid;\n"+
			"setp.gt.u32 %p1, %r5, 0;\nsetp.lt.u32 %p2, %r6, %r7;\nand.pred %p1, %p1, %p2;\nselp.u32 %r5, 1000, 0, %p1;\n"+
			"mad.lo.u32 %r1, %r1, 100, %r5;\nmad.lo.u32 %r1, %r2, 10, %r1;\nadd.u32 %r1, %r1, %r3;\nadd.u32 %r1, %r1, %r4;\nst.global.u32 [%out], %r1;", nil, 4, 1000+100+10+1)
	// cvt.r?i.f64.f64
	for _, c := range []struct {
		mode    string
		in, out float64
	}{
		{"rni", 2.5, 2}, {"rni", 3.5, 4}, {"rni", -0.5, math.Copysign(0, -1)}, {"rzi", -1.75, -1}, {"rmi", -0.5, -1}, {"rpi", -0.5, math.Copysign(0, -1)},
		{"rpi", 0x1p51 + 0.5, 0x1p51 + 1}, {"rmi", 0x1p51 + 0.5, 0x1p51}, {"rni", 0x1p51 + 0.5, 0x1p51}, {"rzi", 1e300, 1e300},
	} {
		i("cvt", fmt.Sprintf("cvt.%s.f64.f64 %v", c.mode, c.in), isaCvtRniF64, "cvt."+c.mode+".f64.f64 %d, %a", "f64", []string{"f64"}, []uint64{b64(c.in)}, b64(c.out))
	}
	// atomics: inc and dec at their edges, 64-bit cas and and, on shared and global memory
	one := func(name, op string, init, b uint64, newv uint64) {
		cs = append(cs, Case{Name: "atomic/" + name, Class: "atomic", ISA: isaAtom, Decls: ".shared .align 8 .b8 sh[16];",
			Body: "mov.u32 %r9, sh;\nld.global.u64 %rd1, [%in];\nld.global.u64 %rd2, [%in+8];\nst.shared.u64 [%r9], %rd1;\n" + op +
				"\nld.shared.u64 %rd4, [%r9];\nst.global.u64 [%out], %rd4;\nst.global.u64 [%out+8], %rd3;",
			In: []uint64{init, b}, Want: []uint64{newv, init}})
	}
	one("atom.shared.inc.u32 at the bound", "cvt.u32.u64 %r2, %rd2;\natom.shared.inc.u32 %r3, [%r9], %r2;\ncvt.u64.u32 %rd3, %r3;", 5, 5, 0)
	one("atom.shared.inc.u32 bound 0", "cvt.u32.u64 %r2, %rd2;\natom.shared.inc.u32 %r3, [%r9], %r2;\ncvt.u64.u32 %rd3, %r3;", 0, 0, 0)
	one("atom.shared.inc.u32 below the bound", "cvt.u32.u64 %r2, %rd2;\natom.shared.inc.u32 %r3, [%r9], %r2;\ncvt.u64.u32 %rd3, %r3;", 0xfffffffd, 0xffffffff, 0xfffffffe)
	one("atom.shared.dec.u32 from 0", "cvt.u32.u64 %r2, %rd2;\natom.shared.dec.u32 %r3, [%r9], %r2;\ncvt.u64.u32 %rd3, %r3;", 0, 9, 9)
	one("atom.shared.dec.u32 bound 0", "cvt.u32.u64 %r2, %rd2;\natom.shared.dec.u32 %r3, [%r9], %r2;\ncvt.u64.u32 %rd3, %r3;", 4, 0, 0)
	one("atom.shared.cas.b64 equal", "atom.shared.cas.b64 %rd3, [%r9], %rd2, 77;", 1<<40|5, 1<<40|5, 77)
	one("atom.shared.cas.b64 high word differs", "atom.shared.cas.b64 %rd3, [%r9], %rd2, 77;", 1<<40|5, 2<<40|5, 1<<40|5)
	one("atom.shared.and.b64", "atom.shared.and.b64 %rd3, [%r9], %rd2;", 0xff00ff00_ff00ff00, 0x0ff00ff0_0ff00ff0, 0x0f000f00_0f000f00)
	one("atom.shared.max.u64", "atom.shared.max.u64 %rd3, [%r9], %rd2;", 5, 1<<63, 1<<63)
	one("atom.shared.max.s64", "atom.shared.max.s64 %rd3, [%r9], %rd2;", 5, 1<<63, 5)
	one("atom.shared.exch.b64", "atom.shared.exch.b64 %rd3, [%r9], %rd2;", 5, 1<<50, 1<<50)
	one("atom.shared.add.u64 carries into the high word", "atom.shared.add.u64 %rd3, [%r9], %rd2;", 0xffffffff, 1, 1<<32)
	one("atom.shared.inc.u32 upper word untouched", "cvt.u32.u64 %r2, %rd2;\natom.shared.inc.u32 %r3, [%r9], %r2;\ncvt.u64.u32 %rd3, %r3;\nld.shared.u32 %r4, [%r9+4];\ncvt.u64.u32 %rd4, %r4;\nst.global.u64 [%out+16], %rd4;", 0x7_00000003, 100, 0x7_00000004)
	cs[len(cs)-1].Want = []uint64{0x7_00000004, 3, 7}
	cs[len(cs)-1].Name = "atomic/atom.shared.inc.u32 leaves the next word"
	cs = append(cs, warp32("vote.sync.ballot of the low half, divergent", isaVoteHalf,
		"setp.ge.u32 %p2, %t, 16;\n@%p2 bra SKIP;\nand.b32 %r1, %t, 1;\nsetp.eq.u32 %p1, %r1, 1;\nvote.sync.ballot.b32 %r2, %p1, 0x0000ffff;\nst.global.b32 [%oa], %r2;\nSKIP:",
		func(l int) (uint64, bool) { return 0xaaaa, l < 16 }))
	cs = append(cs, Case{Name: "warp/bar.warp.sync orders shared memory", Class: "warp", ISA: isaBarWarp, Decls: ".shared .align 4 .b32 ws[32];", Threads: 32, Size: 4,
		Body: "mov.u32 %r9, ws;\nshl.b32 %r1, %t, 2;\nadd.u32 %r2, %r9, %r1;\nmul.lo.u32 %r3, %t, 3;\nst.shared.u32 [%r2], %r3;\nbar.warp.sync 0xffffffff;\n" +
			"xor.b32 %r4, %t, 5;\nshl.b32 %r4, %r4, 2;\nadd.u32 %r4, %r9, %r4;\nld.shared.u32 %r5, [%r4];\nst.global.b32 [%oa], %r5;",
		Want: func() []uint64 {
			w := make([]uint64, 32)
			for l := range w {
				w[l] = uint64((l ^ 5) * 3)
			}
			return w
		}()})
	// cvt.pack
	for _, c := range []struct {
		conv    string
		n       int
		sgn     bool
		a, b, c int64
	}{
		{"s16", 16, true, 70000, -70000, 0}, {"u16", 16, false, -5, 65536, 0}, {"u8", 8, false, 300, 7, 0x1234},
		{"s8", 8, true, -1, -200, 0}, {"s4", 4, true, -9, 5, 0xabcdef}, {"u4", 4, false, 15, 16, 0x7}, {"u2", 2, false, 1, 9, 0xffffffff}, {"s2", 2, true, -3, 1, 1},
	} {
		lo, hi := int64(0), int64(1)<<c.n-1
		if c.sgn {
			lo, hi = -(int64(1) << (c.n - 1)), int64(1)<<(c.n-1)-1
		}
		ta, tb := max(min(c.a, hi), lo), max(min(c.b, hi), lo)
		td := uint64(tb)&mask(c.n) | (uint64(ta)&mask(c.n))<<c.n
		insn := "cvt.pack.sat." + c.conv + ".s32 %d, %a, %b"
		src := []string{"s32", "s32"}
		if c.n < 16 {
			td = (td | uint64(c.c)<<(2*c.n)) & mask(32)
			insn = "cvt.pack.sat." + c.conv + ".s32.b32 %d, %a, %b, %c"
			src = append(src, "b32")
		}
		i("cvt", fmt.Sprintf("cvt.pack.sat.%s %d, %d", c.conv, c.a, c.b), isaCvtPack, insn, "b32", src,
			[]uint64{uint64(c.a) & mask(32), uint64(c.b) & mask(32), uint64(c.c) & mask(32)}, td)
	}
	// half precision arithmetic, each result the exact one rounded once
	h := func(x float64) uint64 { return roundRat(ratOf(x), fmt16, "rn", math.Signbit(x)) }
	toBF := func(x float64) uint64 { return roundRat(ratOf(x), fmtBF, "rn", math.Signbit(x)) }
	hr := func(r *big.Rat) uint64 { return roundRat(r, fmt16, "rn", false) }
	add := func(x, y float64) *big.Rat { return new(big.Rat).Add(ratOf(x), ratOf(y)) }
	mulr := func(x, y float64) *big.Rat { return new(big.Rat).Mul(ratOf(x), ratOf(y)) }
	for _, c := range []struct {
		name, op string
		a, b, c  float64
		want     uint64
	}{
		{"add.rn.f16 tie to even", "add.rn.f16", 1, 0x1p-11, 0, hr(add(1, 0x1p-11))},
		{"add.rn.f16 above the tie", "add.rn.f16", 1, 0x1.8p-11, 0, hr(add(1, 0x1.8p-11))},
		{"add.rn.f16 overflow", "add.rn.f16", 65504, 16, 0, hr(add(65504, 16))},
		{"add.rn.f16 below overflow", "add.rn.f16", 65504, 15, 0, hr(add(65504, 15))},
		{"sub.rn.f16 subnormal result", "sub.rn.f16", 0x1p-14, 0x1.ffcp-15, 0, hr(add(0x1p-14, -0x1.ffcp-15))},
		{"mul.rn.f16", "mul.rn.f16", 1.5, 1.0009765625, 0, hr(mulr(1.5, 1.0009765625))},
		{"mul.rn.f16 to a subnormal", "mul.rn.f16", 0x1p-10, 0x1.8p-14, 0, hr(mulr(0x1p-10, 0x1.8p-14))},
		{"fma.rn.f16 rounded once", "fma.rn.f16", 1.0009765625, 1.0009765625, -1, hr(new(big.Rat).Add(mulr(1.0009765625, 1.0009765625), ratOf(-1)))},
		{"add.rn.sat.f16 above 1", "add.rn.sat.f16", 0.75, 0.5, 0, h(1)},
		{"add.rn.sat.f16 below 0", "add.rn.sat.f16", -0.75, 0.5, 0, 0},
		{"add.rn.ftz.f16 subnormal input", "add.rn.ftz.f16", 0x1p-20, 1, 0, h(1)},
		{"mul.rn.ftz.f16 subnormal result", "mul.rn.ftz.f16", 0x1p-10, -0x1.8p-14, 0, h(math.Copysign(0, -1))},
		{"fma.rn.relu.f16 negative", "fma.rn.relu.f16", 2, -3, 1, 0},
		{"fma.rn.relu.f16 positive", "fma.rn.relu.f16", 2, 3, 1, h(7)},
		{"min.f16 -0, +0", "min.f16", math.Copysign(0, -1), 0, 0, h(math.Copysign(0, -1))},
		{"max.f16 NaN, 2", "max.f16", math.NaN(), 2, 0, h(2)},
		{"max.NaN.f16 NaN, 2", "max.NaN.f16", math.NaN(), 2, 0, 0x7fff},
		{"neg.f16", "neg.f16", 1.5, 0, 0, h(-1.5)},
		{"abs.f16", "abs.f16", -0x1p-24, 0, 0, h(0x1p-24)},
	} {
		ops := map[string]int{"neg": 1, "abs": 1, "fma": 3}[c.op[:3]]
		if ops == 0 {
			ops = 2
		}
		enc := func(x float64) uint64 {
			if math.IsNaN(x) {
				return 0x7e00
			}
			return h(x)
		}
		in := []uint64{enc(c.a), enc(c.b), enc(c.c)}
		insn := c.op + " %d, %a"
		src := []string{"f16"}
		for k := 1; k < ops; k++ {
			insn += ", %" + string(rune('a'+k))
			src = append(src, "f16")
		}
		isa := isaHalfArith
		switch {
		case c.op[:3] == "min" || c.op[:3] == "max":
			isa = isaHalfMin
		case len(c.op) > 8 && (c.op[len(c.op)-8:] == ".sat.f16" || c.op[len(c.op)-8:] == ".ftz.f16" || c.op[len(c.op)-9:] == ".relu.f16"):
			isa = isaHalfSat
		}
		i("float", c.name, isa, insn, "f16", src, in, c.want)
	}
	pk := func(lo, hi uint64) uint64 { return hi<<16 | lo }
	i("float", "add.rn.f16x2 each element", isaHalfArith, "add.rn.f16x2 %d, %a, %b", "f16x2", []string{"f16x2", "f16x2"},
		[]uint64{pk(h(1), h(65504)), pk(h(0x1.8p-11), h(16))}, pk(hr(add(1, 0x1.8p-11)), hr(add(65504, 16))))
	i("float", "fma.rn.f16x2 each element", isaHalfArith, "fma.rn.f16x2 %d, %a, %b, %c", "f16x2", []string{"f16x2", "f16x2", "f16x2"},
		[]uint64{pk(h(3), h(-2)), pk(h(0.5), h(0.25)), pk(h(-1.5), h(8))}, pk(h(0), h(7.5)))
	bfr := func(r *big.Rat) uint64 { return roundRat(r, fmtBF, "rn", false) }
	i("float", "fma.rn.bf16 rounded once", isaHalfArith, "fma.rn.bf16 %d, %a, %b, %c", "bf16", []string{"bf16", "bf16", "bf16"},
		[]uint64{toBF(1.0078125), toBF(1.0078125), toBF(-1)}, bfr(new(big.Rat).Add(mulr(1.0078125, 1.0078125), ratOf(-1))))
	i("float", "fma.rn.bf16x2 each element", isaHalfArith, "fma.rn.bf16x2 %d, %a, %b, %c", "bf16x2", []string{"bf16x2", "bf16x2", "bf16x2"},
		[]uint64{pk(toBF(1.0078125), toBF(3)), pk(toBF(1.0078125), toBF(-1)), pk(toBF(0), toBF(0.5))}, pk(bfr(mulr(1.0078125, 1.0078125)), toBF(-2.5)))
	// atom.cas.b16 at either half of a word, generic atomics on shared memory
	for _, c := range []struct {
		name       string
		off        int
		cmp, newv  uint64
		init, want uint64
	}{
		{"atom.global.cas.b16 upper half equal", 2, 0xbeef, 0x1234, 0x1111_2222_beef_5555, 0x1111_2222_1234_5555},
		{"atom.global.cas.b16 lower half differs", 0, 0x5556, 0x1234, 0x1111_2222_beef_5555, 0x1111_2222_beef_5555},
		{"atom.global.cas.b16 top half equal", 6, 0x1111, 0xffff, 0x1111_2222_beef_5555, 0xffff_2222_beef_5555},
	} {
		old := c.init >> (8 * c.off) & 0xffff
		cs = append(cs, Case{Name: "atomic/" + c.name, Class: "atomic", ISA: isaCas16,
			Body: "ld.global.u16 %h1, [%in];\nld.global.u16 %h2, [%in+8];\natom.global.cas.b16 %h3, [%out+" + itoa(c.off) + "], %h1, %h2;\nst.global.u16 [%out+8], %h3;",
			In:   []uint64{c.cmp, c.newv}, Init: []uint64{c.init, Sentinel}, Want: []uint64{c.want, 0xa5a5a5a5a5a50000 | old}})
	}
	cs = append(cs, Case{Name: "atomic/generic atom.add and red.max on shared memory", Class: "atomic", ISA: isaGenAtom, Decls: ".shared .align 8 .b8 sh[16];", Threads: 64, Size: 8,
		Body: "mov.u64 %rd9, sh;\ncvta.shared.u64 %rd8, %rd9;\nsetp.eq.u32 %p1, %t, 0;\n@%p1 st.shared.u32 [%rd9], 10;\n@%p1 st.shared.u32 [%rd9+4], 0;\nbar.sync 0;\n" +
			"atom.add.u32 %r1, [%rd8], %t;\nred.max.u32 [%rd8+4], %t;\nbar.sync 0;\n@%p1 ld.shared.u64 %rd1, [%rd9];\n@%p1 st.global.u64 [%out], %rd1;",
		Want: []uint64{63<<32 | (10 + 63*64/2)}})
	body("memory", "st.global.v4.u8 and st.global.v2.u16", isaLdVec,
		"mov.u32 %r1, 0x11;\nmov.u32 %r2, 0x22;\nmov.u32 %r3, 0x33;\nmov.u32 %r4, 0x144;\ncvt.u16.u32 %h1, %r1;\ncvt.u16.u32 %h2, %r2;\ncvt.u16.u32 %h3, %r3;\ncvt.u16.u32 %h4, %r4;\n"+
			"st.global.v4.u8 [%out+4], {%h1, %h2, %h3, %h4};\nst.global.v2.u16 [%out+12], {%h4, %h1};",
		nil, 8, 0x44332211_a5a5a5a5, 0x0011_0144_a5a5_a5a5)
	cs = append(cs, Case{Name: "memory/st.local private to each thread", Class: "memory", ISA: isaLocal, Threads: 64, Size: 4,
		Body: ".local .align 4 .b8 lbuf[8];\nmov.u64 %rd9, lbuf;\nmul.lo.u32 %r1, %t, 7;\nst.local.u32 [%rd9+4], %r1;\nbar.sync 0;\nld.local.u32 %r2, [%rd9+4];\nst.global.b32 [%oa], %r2;",
		Want: func() []uint64 {
			w := make([]uint64, 64)
			for t := range w {
				w[t] = uint64(7 * t)
			}
			return w
		}()})
	// conversions rounded once: no intermediate f32 between f64 and f16 or bf16
	once := func(x float64, f format, mode string) uint64 { return roundRat(ratOf(x), f, mode, math.Signbit(x)) }
	for _, c := range []struct {
		name, insn, d, s string
		in               uint64
		want             uint64
	}{
		{"cvt.rn.f16.f64 above a tie of f32", "cvt.rn.f16.f64", "f16", "f64", b64(1 + 0x1p-11 + 0x1p-40), once(1+0x1p-11+0x1p-40, fmt16, "rn")},
		{"cvt.rn.f16.f64 below a tie", "cvt.rn.f16.f64", "f16", "f64", b64(1 + 0x1p-11 - 0x1p-40), once(1+0x1p-11-0x1p-40, fmt16, "rn")},
		{"cvt.rn.bf16.f64 above a tie of f32", "cvt.rn.bf16.f64", "bf16", "f64", b64(1 + 0x1p-8 + 0x1p-40), once(1+0x1p-8+0x1p-40, fmtBF, "rn")},
		{"cvt.rz.f16.f64 overflow", "cvt.rz.f16.f64", "f16", "f64", b64(1e10), once(1e10, fmt16, "rz")},
		{"cvt.rp.f16.f64 subnormal", "cvt.rp.f16.f64", "f16", "f64", b64(0x1p-30), once(0x1p-30, fmt16, "rp")},
		{"cvt.rm.f16.f64 negative subnormal", "cvt.rm.f16.f64", "f16", "f64", b64(-0x1p-30), once(-0x1p-30, fmt16, "rm")},
		{"cvt.rn.f16.f32 subnormal tie", "cvt.rn.f16.f32", "f16", "f32", b32(0x1p-25), once(0x1p-25, fmt16, "rn")},
		{"cvt.rn.f16.f32 above the subnormal tie", "cvt.rn.f16.f32", "f16", "f32", b32(0x1p-25 + 0x1p-35), once(0x1p-25+0x1p-35, fmt16, "rn")},
		{"cvt.f32.f16 least subnormal", "cvt.f32.f16", "f32", "f16", 1, b32(0x1p-24)},
		{"cvt.f64.bf16", "cvt.f64.bf16", "f64", "bf16", 0xc0a0, b64(-5)},
		{"cvt.rn.f16.u64 overflow", "cvt.rn.f16.u64", "f16", "u64", math.MaxUint64, once(0x1p64, fmt16, "rn")},
		{"cvt.rz.f16.u64 largest", "cvt.rz.f16.u64", "f16", "u64", math.MaxUint64, once(0x1p64, fmt16, "rz")},
		{"cvt.rn.f16.s32 rounds", "cvt.rn.f16.s32", "f16", "s32", 2049, once(2049, fmt16, "rn")},
		{"cvt.rp.f16.s32 rounds up", "cvt.rp.f16.s32", "f16", "s32", 2049, once(2049, fmt16, "rp")},
		{"cvt.rm.f32.s64 negative", "cvt.rm.f32.s64", "f32", "s64", uint64(0xffffffff_00000000) - 1, once(float64(int64(-(1<<32)-1)), fmt32, "rm")},
		{"cvt.rni.u8.f16 saturates", "cvt.rni.u8.f16", "u16", "f16", once(300, fmt16, "rn"), 255},
		{"cvt.rni.s8.f16 saturates", "cvt.rni.s8.f16", "s16", "f16", once(-300, fmt16, "rn"), 0xff80},
		{"cvt.rmi.s32.f16", "cvt.rmi.s32.f16", "s32", "f16", once(-2.5, fmt16, "rn"), 0xfffffffd},
		{"cvt.rpi.u32.f16 negative", "cvt.rpi.u32.f16", "u32", "f16", once(-2.5, fmt16, "rn"), 0},
	} {
		isa := isaCvtOnce
		if c.insn[len(c.insn)-4:] == ".f16" && c.d != "f32" {
			isa = isaCvtHalfInt
		}
		i("cvt", c.name, isa, c.insn+" %d, %a", c.d, []string{c.s}, []uint64{c.in}, c.want)
	}
	// half-precision comparisons and sign operations, element by element
	body("compare", "setp.lt.f16x2 p|q", isaHalfSetp,
		"ld.global.b32 %r1, [%in];\nld.global.b32 %r2, [%in+8];\nsetp.lt.f16x2 %p1|%p2, %r1, %r2;\nselp.u32 %r3, 1, 0, %p1;\nselp.u32 %r4, 2, 0, %p2;\nor.b32 %r3, %r3, %r4;\nst.global.u32 [%out], %r3;",
		[]uint64{pk(h(1), h(5)), pk(h(2), h(-5))}, 4, 1)
	body("compare", "setp.gtu.bf16x2 p|q with a NaN", isaHalfSetp,
		"ld.global.b32 %r1, [%in];\nld.global.b32 %r2, [%in+8];\nsetp.gtu.bf16x2 %p1|%p2, %r1, %r2;\nselp.u32 %r3, 1, 0, %p1;\nselp.u32 %r4, 2, 0, %p2;\nor.b32 %r3, %r3, %r4;\nst.global.u32 [%out], %r3;",
		[]uint64{pk(toBF(1), 0x7fc0), pk(toBF(2), toBF(3))}, 4, 2)
	i("float", "neg.bf16x2", isaHalfBits, "neg.bf16x2 %d, %a", "bf16x2", []string{"bf16x2"}, []uint64{pk(toBF(1.5), toBF(-2))}, pk(toBF(-1.5), toBF(2)))
	i("float", "abs.f16x2", isaHalfBits, "abs.f16x2 %d, %a", "f16x2", []string{"f16x2"}, []uint64{pk(h(-0x1p-24), h(3))}, pk(h(0x1p-24), h(3)))
	// scalar video instructions: 33-bit operands, an exact result, .sat to dtype's range
	for _, c := range []struct {
		op, d, a, b string
		sat         bool
		x, y        uint64
	}{
		{"vadd", "s32", "s32", "s32", true, 0x7fffffff, 1},
		{"vadd", "u32", "u32", "u32", false, 0xffffffff, 2},
		{"vadd", "u32", "s32", "u32", true, 0xfffffff0, 3},
		{"vsub", "u32", "u32", "u32", true, 3, 10},
		{"vsub", "s32", "u32", "s32", true, 0xffffffff, 0xffffffff},
		{"vabsdiff", "u32", "u32", "u32", false, 3, 0xfffffff0},
		{"vabsdiff", "s32", "s32", "s32", true, 0x80000000, 0x7fffffff},
		{"vmin", "s32", "s32", "u32", false, 0xffffffff, 0xffffffff},
		{"vmax", "u32", "s32", "s32", true, 0xfffffffb, 0xfffffffe},
		{"vmax", "s32", "u32", "s32", true, 0x80000000, 5},
	} {
		ta, tb := int64(extend(c.x, 32, c.a == "s32")), int64(extend(c.y, 32, c.b == "s32"))
		var r int64
		switch c.op {
		case "vadd":
			r = ta + tb
		case "vsub":
			r = ta - tb
		case "vabsdiff":
			r = max(ta-tb, tb-ta)
		case "vmin":
			r = min(ta, tb)
		case "vmax":
			r = max(ta, tb)
		}
		mods := ""
		if c.sat {
			mods = ".sat"
			lo, hi := int64(0), int64(math.MaxUint32)
			if c.d == "s32" {
				lo, hi = math.MinInt32, math.MaxInt32
			}
			r = max(min(r, hi), lo)
		}
		insn := c.op + "." + c.d + "." + c.a + "." + c.b + mods
		i("int", fmt.Sprintf("%s %#x, %#x", insn, c.x, c.y), isaVideo, insn+" %d, %a, %b", "b32", []string{"b32", "b32"}, []uint64{c.x, c.y}, uint64(r)&mask(32))
	}
	// special registers of the lane
	cs = append(cs, warp32("%laneid and %lanemask_*", isaLaneRegs,
		"mov.u32 %r1, %laneid;\nmov.u32 %r2, %lanemask_eq;\nmov.u32 %r3, %lanemask_lt;\nmov.u32 %r4, %lanemask_le;\nmov.u32 %r5, %lanemask_gt;\nmov.u32 %r6, %lanemask_ge;\n"+
			"setp.eq.u32 %p1, %r1, %t;\nmov.u32 %r7, 1;\nshl.b32 %r7, %r7, %t;\nsetp.eq.u32 %p2, %r2, %r7;\nsub.u32 %r8, %r7, 1;\nsetp.eq.u32 %p3, %r3, %r8;\nor.b32 %r8, %r8, %r7;\nsetp.eq.u32 %p4, %r4, %r8;\n"+
			"not.b32 %r9, %r8;\nsetp.eq.u32 %p5, %r5, %r9;\nnot.b32 %r9, %r3;\nsetp.eq.u32 %p6, %r6, %r9;\n"+
			"and.pred %p1, %p1, %p2;\nand.pred %p1, %p1, %p3;\nand.pred %p1, %p1, %p4;\nand.pred %p1, %p1, %p5;\nand.pred %p1, %p1, %p6;\nselp.u32 %r10, 1, 0, %p1;\nst.global.b32 [%oa], %r10;",
		func(int) (uint64, bool) { return 1, true }))
	return cs
}
