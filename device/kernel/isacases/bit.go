package isacases

import (
	"fmt"
	"math/bits"
)

const (
	isaLogic = "and, or, xor, not, cnot: bitwise operations; cnot: d = (a==0) ? 1 : 0."
	isaShl   = "shl: Shift a left by the amount specified by unsigned 32-bit value in b. Shift amounts greater than the register width N are clamped to N."
	isaShr   = "shr: Shift a right by the amount specified by unsigned 32-bit value in b. Shift amounts greater than the register width N are clamped to N. Signed shifts fill with the sign bit, unsigned and untyped shifts fill with 0."
	isaBfe   = "bfe: Extract bit field from a and place the zero or sign-extended result in d. msb = 31 or 63; pos = b & 0xff; len = c & 0xff; sbit = (unsigned or len==0) ? 0 : a[min(pos+len-1,msb)]; d[i] = (i<len && pos+i<=msb) ? a[pos+i] : sbit."
	isaBfi   = "bfi: Align and insert a bit field from a into b, and place the result in f. pos = c & 0xff; len = d & 0xff; f = b; for (i=0; i<len && pos+i<=msb; i++) f[pos+i] = a[i]."
	isaBrev  = "brev: Perform bitwise reversal of input: d[i] = a[msb-i]."
	isaClz   = "clz: Count the number of leading zeros in a starting with the most-significant bit and place the result in 32-bit destination register d. For .b32 type, the number of leading zeros is between 0 and 32, inclusively. For .b64 type, between 0 and 64."
	isaPopc  = "popc: Count the number of one bits in a and place the resulting population count in 32-bit destination register d."
	isaBfind = "bfind: Find the bit position of the most significant non-sign bit in a and place the result in d. For unsigned integers, bfind returns the bit position of the most significant 1. For signed integers, bfind returns the bit position of the most significant 0 for negative inputs and the most significant 1 for non-negative inputs. If no non-sign bit is found, bfind returns 0xffffffff. .shiftamt returns the left shift amount needed to normalize a: msb - d (0xffffffff when none is found)."
	isaLop3  = "lop3: Compute an arbitrary logical operation on three inputs a, b, c: the function is given by immLut, the value F(0xF0, 0xCC, 0xAA) of the operation F on the constants ta = 0xF0, tb = 0xCC, tc = 0xAA, applied bitwise."
	isaPrmt  = "prmt: Pick bytes from {b, a} (bytes 7..4 of b, 3..0 of a) per selector c: each 4-bit selector nibble picks a byte by its low three bits; if its msb is set, the byte's sign (msb) is replicated over the byte."
	isaShf   = "shf: Shift the 64-bit value formed by concatenating b:a (b the upper half) left (shf.l, d the upper 32 bits) or right (shf.r, d the lower 32 bits) by n: .clamp: n = min(c, 32); .wrap: n = c & 0x1f."
)

func bitCases() []Case {
	var cs []Case
	b := func(name, isa, insn, d string, s []string, in []uint64, want uint64) {
		cs = append(cs, ins("bit", name, isa, insn, d, s, in, want))
	}
	for _, t := range []string{"b16", "b32", "b64"} {
		w := width(t)
		m := mask(w)
		x, y := uint64(0xf0f0f0f0f0f0f0f0)&m, uint64(0x123456789abcdef0)&m
		tt := []string{t, t}
		b("and."+t, isaLogic, "and."+t+" %d, %a, %b", t, tt, []uint64{x, y}, x&y)
		b("or."+t, isaLogic, "or."+t+" %d, %a, %b", t, tt, []uint64{x, y}, x|y)
		b("xor."+t, isaLogic, "xor."+t+" %d, %a, %b", t, tt, []uint64{x, y}, x^y)
		b("not."+t, isaLogic, "not."+t+" %d, %a", t, tt[:1], []uint64{x}, ^x&m)
		b("cnot."+t+" 0", isaLogic, "cnot."+t+" %d, %a", t, tt[:1], []uint64{0}, 1)
		b("cnot."+t+" msb", isaLogic, "cnot."+t+" %d, %a", t, tt[:1], []uint64{1 << (w - 1)}, 0)
		st := []string{t, "u32"}
		neg := uint64(1)<<(w-1) | 0x30
		for _, n := range []uint64{1, uint64(w - 1), uint64(w), uint64(w + 1), 255, 0x100000001} {
			var shl, shru, shrs uint64
			if n < uint64(w) {
				shl = x << n & m
				shru = neg >> n
				shrs = extend(neg, w, true) >> n
				shrs = uint64(int64(extend(neg, w, true)) >> n)
			} else {
				shrs = m
			}
			shrs &= m
			sn := fmt.Sprint(n)
			if n > 255 {
				sn = "2^32+1"
			}
			if n == 0x100000001 {
				n &= 0xffffffff // b is a u32: 2^32+1 is 1 as the instruction reads it
				continue
			}
			b(fmt.Sprintf("shl.%s by %s", t, sn), isaShl, "shl."+t+" %d, %a, %b", t, st, []uint64{x, n}, shl)
			b(fmt.Sprintf("shr.u%d by %s", w, sn), isaShr, fmt.Sprintf("shr.u%d %%d, %%a, %%b", w), t, st, []uint64{neg, n}, shru)
			b(fmt.Sprintf("shr.s%d by %s", w, sn), isaShr, fmt.Sprintf("shr.s%d %%d, %%a, %%b", w), t, st, []uint64{neg, n}, shrs)
		}
		if w == 16 {
			continue
		}
		// bfe: edge positions and lengths
		bfe := func(a uint64, pos, ln uint64, sgn bool) uint64 {
			msb := uint64(w - 1)
			pos &= 0xff
			ln &= 0xff
			sbit := uint64(0)
			if sgn && ln != 0 {
				sbit = a >> min(pos+ln-1, msb) & 1
			}
			var d uint64
			for i := uint64(0); i <= msb; i++ {
				bit := sbit
				if i < ln && pos+i <= msb {
					bit = a >> (pos + i) & 1
				}
				d |= bit << i
			}
			return d
		}
		a := uint64(0x8badf00ddeadbeef) & m
		for _, pl := range [][2]uint64{{0, 0}, {4, 8}, {uint64(w - 4), 8}, {uint64(w), 4}, {300, 3}, {0, uint64(w)}, {3, 0x105}, {0, 255}} {
			for _, s := range []string{"u", "s"} {
				ty := fmt.Sprintf("%s%d", s, w)
				b(fmt.Sprintf("bfe.%s pos %d len %d", ty, pl[0], pl[1]), isaBfe, "bfe."+ty+" %d, %a, %b, %c", t,
					[]string{t, "u32", "u32"}, []uint64{a, pl[0], pl[1]}, bfe(a, pl[0], pl[1], s == "s"))
			}
		}
		// bfi
		bfi := func(a, bb, pos, ln uint64) uint64 {
			msb := uint64(w - 1)
			pos &= 0xff
			ln &= 0xff
			f := bb
			for i := uint64(0); i < ln && pos+i <= msb; i++ {
				f = f&^(1<<(pos+i)) | (a>>i&1)<<(pos+i)
			}
			return f
		}
		for _, pl := range [][2]uint64{{0, 0}, {4, 8}, {uint64(w - 4), 8}, {uint64(w), 4}, {0, uint64(w)}, {0x104, 4}} {
			b(fmt.Sprintf("bfi.%s pos %d len %d", t, pl[0], pl[1]), isaBfi, "bfi."+t+" %d, %a, %b, %c, %r1", t,
				[]string{t, t, "u32"}, []uint64{a, y, pl[0]}, bfi(a, y, pl[0], pl[1]))
			cs[len(cs)-1].Insn = fmt.Sprintf("mov.u32 %%r1, %d; bfi.%s %%d, %%a, %%b, %%c, %%r1", pl[1], t)
		}
		// brev, clz, popc, bfind
		rev := bits.Reverse64(a) >> (64 - w)
		b("brev."+t, isaBrev, "brev."+t+" %d, %a", t, tt[:1], []uint64{a}, rev)
		for _, v := range []uint64{0, 1, m, 0x00010000} {
			clz := uint64(bits.LeadingZeros64(v) - (64 - w))
			b(fmt.Sprintf("clz.%s %#x", t, v), isaClz, "clz."+t+" %d, %a", "b32", tt[:1], []uint64{v}, clz)
			b(fmt.Sprintf("popc.%s %#x", t, v), isaPopc, "popc."+t+" %d, %a", "b32", tt[:1], []uint64{v}, uint64(bits.OnesCount64(v)))
		}
		for _, v := range []uint64{0, 1, m, m - 0x100, 1 << (w - 1), 0x00010000} {
			for _, s := range []string{"u", "s"} {
				ty := fmt.Sprintf("%s%d", s, w)
				vv := v
				if s == "s" && v>>(w-1)&1 == 1 {
					vv = ^v & m
				}
				d := uint64(0xffffffff)
				if vv != 0 {
					d = uint64(63 - bits.LeadingZeros64(vv))
				}
				b(fmt.Sprintf("bfind.%s %#x", ty, v), isaBfind, "bfind."+ty+" %d, %a", "b32", []string{ty}, []uint64{v}, d)
				if v == 1 || v == m || v == 0 {
					sa := d
					if d != 0xffffffff {
						sa = uint64(w-1) - d
					}
					b(fmt.Sprintf("bfind.shiftamt.%s %#x", ty, v), isaBfind, "bfind.shiftamt."+ty+" %d, %a", "b32", []string{ty}, []uint64{v}, sa)
				}
			}
		}
	}
	// lop3: functions given by their immLut
	a, bb, c := uint64(0x0f0f3355), uint64(0x00ff0f0f), uint64(0x12345678)
	for _, f := range []struct {
		name string
		lut  uint8
		fn   func(a, b, c uint64) uint64
	}{
		{"a&b&c", 0xF0 & 0xCC & 0xAA, func(a, b, c uint64) uint64 { return a & b & c }},
		{"a|b|c", 0xF0 | 0xCC | 0xAA, func(a, b, c uint64) uint64 { return a | b | c }},
		{"a^b^c", 0xF0 ^ 0xCC ^ 0xAA, func(a, b, c uint64) uint64 { return a ^ b ^ c }},
		{"(a&b)|(~a&c)", (0xF0 & 0xCC) | (^0xF0 & 0xAA), func(a, b, c uint64) uint64 { return a&b | ^a&c }},
		{"~(a|b)&c", ^(0xF0 | 0xCC) & 0xAA, func(a, b, c uint64) uint64 { return ^(a | b) & c }},
		{"0", 0, func(a, b, c uint64) uint64 { return 0 }},
		{"1", 0xff, func(a, b, c uint64) uint64 { return 0xffffffff }},
		{"b", 0xCC, func(a, b, c uint64) uint64 { return b }},
	} {
		b("lop3.b32 "+f.name, isaLop3, fmt.Sprintf("lop3.b32 %%d, %%a, %%b, %%c, %d", f.lut), "b32", []string{"b32", "b32", "b32"},
			[]uint64{a, bb, c}, f.fn(a, bb, c)&0xffffffff)
	}
	// prmt, default mode
	pa, pb := uint64(0x80e1d2c3), uint64(0x7b6a5948)
	prmt := func(sel uint64) uint64 {
		bytes := pb<<32 | pa
		var d uint64
		for i := 0; i < 4; i++ {
			n := sel >> (4 * i) & 0xf
			v := bytes >> (8 * (n & 7)) & 0xff
			if n&8 != 0 {
				v = 0
				if bytes>>(8*(n&7))&0x80 != 0 {
					v = 0xff
				}
			}
			d |= v << (8 * i)
		}
		return d
	}
	for _, sel := range []uint64{0x3210, 0x7654, 0x0123, 0x4444, 0x8888, 0xb9f1, 0x12345670 & 0xffff} {
		b(fmt.Sprintf("prmt.b32 %#04x", sel), isaPrmt, "prmt.b32 %d, %a, %b, %c", "b32", []string{"b32", "b32", "b32"}, []uint64{pa, pb, sel}, prmt(sel))
	}
	b("prmt.b32 selector's upper bits ignored", isaPrmt, "prmt.b32 %d, %a, %b, %c", "b32", []string{"b32", "b32", "b32"}, []uint64{pa, pb, 0xffff3210}, prmt(0x3210))
	// shf
	lo, hi := uint64(0x89abcdef), uint64(0x01234567)
	for _, n := range []uint64{0, 4, 31, 32, 33, 64} {
		for _, mode := range []string{"clamp", "wrap"} {
			s := n & 31
			if mode == "clamp" {
				s = min(n, 32)
			}
			v := hi<<32 | lo
			l := (v << s) >> 32 & 0xffffffff
			r := (v >> s) & 0xffffffff
			in := []uint64{lo, hi, n}
			b(fmt.Sprintf("shf.l.%s.b32 by %d", mode, n), isaShf, "shf.l."+mode+".b32 %d, %a, %b, %c", "b32", []string{"b32", "b32", "u32"}, in, l)
			b(fmt.Sprintf("shf.r.%s.b32 by %d", mode, n), isaShf, "shf.r."+mode+".b32 %d, %a, %b, %c", "b32", []string{"b32", "b32", "u32"}, in, r)
		}
	}
	return cs
}
