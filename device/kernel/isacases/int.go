package isacases

import (
	"fmt"
	"math/big"
)

const (
	isaAdd     = "add: Performs addition and writes the resulting value into a destination register. (Integer arithmetic wraps around: d = a + b.)"
	isaAddSat  = ".sat limits result to MININT..MAXINT (no overflow) for the size of the operation. Applies only to .s32 type."
	isaSub     = "sub: Performs subtraction and writes the resulting value into a destination register: d = a - b."
	isaMul     = "mul: Compute the product of two values. .hi/.lo: t = a * b; d = t<2n-1..n> or t<n-1..0>; .wide: d = t (the full 2n-bit product)."
	isaMad     = "mad: Multiplies two values, optionally extracts the high or low half of the intermediate result, and adds a third value: t = a * b; n = bitwidth of type; d = t<2n-1..n> + c (.hi), t<n-1..0> + c (.lo), t + c (.wide)."
	isaMadSat  = "mad.hi.sat.s32: saturation modifier limits result to MININT..MAXINT (no overflow) for the size of the operation. Applies only to .s32 type in .hi mode."
	isaDiv     = "div: Divides a by b, stores result in d: d = a / b. (C semantics: the quotient is truncated toward zero.)"
	isaDivZero = "Division by zero yields an unspecified, machine-specific value. (The interpreter gives all ones for a quotient and the dividend for a remainder, as NVIDIA GPUs do.)"
	isaDivOvf  = "div.s: the ISA does not say what MININT / -1 gives; the interpreter gives the two's complement wrap-around, MININT."
	isaRem     = "rem: Divides a by b, store the remainder in d: d = a % b. (C semantics: the remainder has the sign of the dividend.)"
	isaMinMax  = "min/max: Store the minimum (maximum) of a and b in d: d = (a < b) ? a : b (d = (a > b) ? a : b), comparing as signed or unsigned per the type."
	isaAbs     = "abs: Take the absolute value of a and store it in d: d = |a|. (The ISA does not say what |MININT| gives; the interpreter gives MININT, the two's complement wrap-around.)"
	isaNeg     = "neg: Negate the sign of a and store the result in d: d = -a (two's complement, wrapping)."
	isaSad     = "sad: Adds the absolute value of a-b to c and writes the resulting value into d: d = c + ((a<b) ? b-a : a-b)."
	isaAddc    = "add.cc: carry-out written to CC.CF; addc: d = a + b + CC.CF (add with carry-in)."
	isaMul24   = "mul24: Compute the product of two 24-bit integer values held in 32-bit source registers: t = a[23:0] * b[23:0]; d = .hi ? t<47..16> : t<31..0>."
)

func ibig(v uint64, w int, sgn bool) *big.Int {
	v = extend(v, w, sgn)
	if sgn {
		return big.NewInt(int64(v))
	}
	return new(big.Int).SetUint64(v & mask(w))
}

// lowBits is x's low w bits (two's complement).
func lowBits(x *big.Int, w int) uint64 {
	m := new(big.Int).Lsh(big.NewInt(1), uint(w))
	r := new(big.Int).Mod(x, m)
	return r.Uint64()
}

func intCases() []Case {
	var cs []Case
	for _, w := range []int{16, 32, 64} {
		mx := mask(w - 1)          // MAXINT
		mn := uint64(1) << (w - 1) // MININT's bits
		all := mask(w)
		s, u := fmt.Sprintf("s%d", w), fmt.Sprintf("u%d", w)
		neg := func(x int64) uint64 { return uint64(x) & all }
		bin := func(name, isa, op, t string, a, b, want uint64) {
			cs = append(cs, ins("int", name, isa, op+"."+t+" %d, %a, %b", t, []string{t, t}, []uint64{a, b}, want))
		}
		ter := func(name, isa, op, t, dt string, a, b, c, want uint64) {
			cs = append(cs, ins("int", name, isa, op+"."+t+" %d, %a, %b, %c", dt, []string{t, t, dt}, []uint64{a, b, c}, want))
		}
		bin("add."+s+" MAX+1", isaAdd, "add", s, mx, 1, mn)
		bin("add."+u+" MAX+1", isaAdd, "add", u, all, 1, 0)
		bin("sub."+s+" MIN-1", isaSub, "sub", s, mn, 1, mx)
		bin("sub."+u+" 0-1", isaSub, "sub", u, 0, 1, all)
		// products
		type pair struct{ a, b uint64 }
		for _, p := range []pair{{neg(-3), mx}, {mn, mn}, {all, all}, {0x1234 & all, neg(-0x5678)}} {
			for _, t := range []string{s, u} {
				sg := t[0] == 's'
				prod := new(big.Int).Mul(ibig(p.a, w, sg), ibig(p.b, w, sg))
				bin(fmt.Sprintf("mul.lo.%s %#x*%#x", t, p.a, p.b), isaMul, "mul.lo", t, p.a, p.b, lowBits(prod, w))
				bin(fmt.Sprintf("mul.hi.%s %#x*%#x", t, p.a, p.b), isaMul, "mul.hi", t, p.a, p.b, lowBits(new(big.Int).Rsh(prod, uint(w)), w))
				if w < 64 {
					cs = append(cs, ins("int", fmt.Sprintf("mul.wide.%s %#x*%#x", t, p.a, p.b), isaMul, "mul.wide."+t+" %d, %a, %b",
						fmt.Sprintf("b%d", 2*w), []string{t, t}, []uint64{p.a, p.b}, lowBits(prod, 2*w)))
				}
			}
		}
		// mad
		c := neg(-1000)
		for _, t := range []string{s, u} {
			sg := t[0] == 's'
			prod := new(big.Int).Mul(ibig(mn|5, w, sg), ibig(neg(-7), w, sg))
			ter("mad.lo."+t, isaMad, "mad.lo", t, t, mn|5, neg(-7), c, lowBits(new(big.Int).Add(prod, ibig(c, w, sg)), w))
			ter("mad.hi."+t, isaMad, "mad.hi", t, t, mn|5, neg(-7), c,
				lowBits(new(big.Int).Add(new(big.Int).Rsh(prod, uint(w)), ibig(c, w, sg)), w))
			if w < 64 {
				dt := fmt.Sprintf("b%d", 2*w)
				cc := mask(2*w) - 999 // -1000 in 2w bits
				if !sg {
					cc = 1000
				}
				ter("mad.wide."+t, isaMad, "mad.wide", t, dt, mn|5, neg(-7), cc,
					lowBits(new(big.Int).Add(prod, ibig(cc, 2*w, sg)), 2*w))
			}
		}
		// division and remainder
		bin("div."+s+" -7/2", isaDiv, "div", s, neg(-7), 2, neg(-3))
		bin("div."+u+" MAX/3", isaDiv, "div", u, all, 3, all/3)
		bin("rem."+s+" -7%2", isaRem, "rem", s, neg(-7), 2, neg(-1))
		bin("rem."+s+" 7%-2", isaRem, "rem", s, 7, neg(-2), 1)
		bin("rem."+u+" MAX%10", isaRem, "rem", u, all, 10, all%10)
		bin("rem."+s+" MIN%-1", isaRem, "rem", s, mn, neg(-1), 0)
		cs = append(cs,
			open(ins("int", "div."+s+" MIN/-1", isaDivOvf, "div."+s+" %d, %a, %b", s, []string{s, s}, []uint64{mn, neg(-1)}, mn)),
			open(ins("int", "div."+s+" by zero", isaDivZero, "div."+s+" %d, %a, %b", s, []string{s, s}, []uint64{5, 0}, all)),
			open(ins("int", "div."+u+" by zero", isaDivZero, "div."+u+" %d, %a, %b", u, []string{u, u}, []uint64{5, 0}, all)),
			open(ins("int", "rem."+s+" by zero", isaDivZero, "rem."+s+" %d, %a, %b", s, []string{s, s}, []uint64{neg(-5), 0}, neg(-5))),
			open(ins("int", "rem."+u+" by zero", isaDivZero, "rem."+u+" %d, %a, %b", u, []string{u, u}, []uint64{7, 0}, 7)),
		)
		// min, max
		bin("min."+s, isaMinMax, "min", s, neg(-1), 1, neg(-1))
		bin("min."+u, isaMinMax, "min", u, neg(-1), 1, 1)
		bin("max."+s, isaMinMax, "max", s, mn, mx, mx)
		bin("max."+u, isaMinMax, "max", u, mn, mx, mn)
		// abs, neg
		cs = append(cs,
			ins("int", "abs."+s+" -5", isaAbs, "abs."+s+" %d, %a", s, []string{s}, []uint64{neg(-5)}, 5),
			open(ins("int", "abs."+s+" MIN", isaAbs, "abs."+s+" %d, %a", s, []string{s}, []uint64{mn}, mn)),
			ins("int", "neg."+s+" MIN", isaNeg, "neg."+s+" %d, %a", s, []string{s}, []uint64{mn}, mn),
			ins("int", "neg."+s+" 1", isaNeg, "neg."+s+" %d, %a", s, []string{s}, []uint64{1}, all),
		)
		// sad
		ter("sad."+s, isaSad, "sad", s, s, neg(-3), 4, 10, 17)
		ter("sad."+u, isaSad, "sad", u, u, 3, all, 1, lowBits(new(big.Int).Add(big.NewInt(1), new(big.Int).Sub(new(big.Int).SetUint64(all), big.NewInt(3))), w))
	}
	// .sat forms
	const mx32, mn32 = 0x7fffffff, 0x80000000
	cs = append(cs,
		ins("int", "add.sat.s32 MAX+1", isaAddSat, "add.sat.s32 %d, %a, %b", "s32", []string{"s32", "s32"}, []uint64{mx32, 1}, mx32),
		ins("int", "add.sat.s32 MIN+-1", isaAddSat, "add.sat.s32 %d, %a, %b", "s32", []string{"s32", "s32"}, []uint64{mn32, 0xffffffff}, mn32),
		ins("int", "sub.sat.s32 MIN-1", isaAddSat, "sub.sat.s32 %d, %a, %b", "s32", []string{"s32", "s32"}, []uint64{mn32, 1}, mn32),
		ins("int", "sub.sat.s32 MAX--1", isaAddSat, "sub.sat.s32 %d, %a, %b", "s32", []string{"s32", "s32"}, []uint64{mx32, 0xffffffff}, mx32),
		ins("int", "sub.sat.s32 in range", isaAddSat, "sub.sat.s32 %d, %a, %b", "s32", []string{"s32", "s32"}, []uint64{5, 7}, 0xfffffffe),
		// (MIN*MIN)>>32 = 2^30; + MAX overflows
		ins("int", "mad.hi.sat.s32 overflow", isaMadSat, "mad.hi.sat.s32 %d, %a, %b, %c", "s32", []string{"s32", "s32", "s32"}, []uint64{mn32, mn32, mx32}, mx32),
		ins("int", "mad.hi.sat.s32 in range", isaMadSat, "mad.hi.sat.s32 %d, %a, %b, %c", "s32", []string{"s32", "s32", "s32"}, []uint64{mn32, 2, 5}, 4),
		ins("int", "add.cc addc u32 carry", isaAddc, "add.cc.u32 %r1, %a, %b; addc.u32 %d, %c, 0", "u32", []string{"u32", "u32", "u32"}, []uint64{0xffffffff, 1, 41}, 42),
		ins("int", "sub.cc subc u32 borrow", "sub.cc: borrow-out written to CC.CF; subc: d = a - (b + CC.CF).", "sub.cc.u32 %r1, %a, %b; subc.u32 %d, %c, 0", "u32", []string{"u32", "u32", "u32"}, []uint64{0, 1, 43}, 42),
		ins("int", "add.cc addc u64 carry", isaAddc, "add.cc.u64 %rd1, %a, %b; addc.u64 %d, %c, 1", "u64", []string{"u64", "u64", "u64"}, []uint64{1 << 63, 1 << 63, 40}, 42),
		ins("int", "mul24.lo.s32 -1*2", isaMul24, "mul24.lo.s32 %d, %a, %b", "s32", []string{"s32", "s32"}, []uint64{0xff000000 | 0xffffff, 2}, 0xfffffffe),
		ins("int", "mul24.hi.u32", isaMul24, "mul24.hi.u32 %d, %a, %b", "u32", []string{"u32", "u32"}, []uint64{0xabffffff, 0xffffff}, lowBits(new(big.Int).Rsh(new(big.Int).Mul(big.NewInt(0xffffff), big.NewInt(0xffffff)), 16), 32)),
	)
	return cs
}
