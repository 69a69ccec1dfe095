package ptx

import (
	"fmt"
	"math"
	"testing"

	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/stretchr/testify/require"
)

// laneKernel is a kernel k(out) whose threads run body with %r0 = %tid.x,
// %rd1 = out and %rd3 = out + 4*%tid.x, then store %r9 at [%rd3]. decls
// go before the kernel (module variables).
func laneKernel(header, decls, body string) string {
	return header + decls + `
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<40>; .reg .b64 %rd<16>; .reg .pred %p<8>; .reg .b16 %rs<8>; .reg .f32 %f<8>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r0, %tid.x;
	mul.wide.u32 %rd2, %r0, 4;
	add.s64 %rd3, %rd1, %rd2;
` + body + `
	st.global.u32 [%rd3], %r9;
	ret;
}`
}

// runLanes runs laneKernel in one block of n threads and returns what
// each stored.
func runLanes(t *testing.T, header, decls, body string, n int) []uint32 {
	t.Helper()
	out := make([]byte, 4*n)
	_, err := runOne(t, laneKernel(header, decls, body), "k", [3]uint32{1, 1, 1}, [3]uint32{uint32(n), 1, 1}, out, false)
	require.NoError(t, err)
	return u32s(out)
}

// TestLop3 checks lop3.b32 against the ISA: "For a logical operation
// F(a, b, c) the value of immLut can be computed by applying the same
// operation to three predefined constant values as follows: ta = 0xF0;
// tb = 0xCC; tc = 0xAA; immLut = F(ta, tb, tc);", with its four examples
// and with F's of every immLut drawn at random (the result bit is immLut's
// bit at the index the three operand bits make, which is what applying F
// to ta, tb and tc tabulates).
func TestLop3(t *testing.T) {
	type fcase struct {
		name string
		lut  uint32
		f    func(a, b, c uint32) uint32
	}
	cases := []fcase{
		{"a & b & c = 0x80", 0x80, func(a, b, c uint32) uint32 { return a & b & c }},
		{"a | b | c = 0xFE", 0xFE, func(a, b, c uint32) uint32 { return a | b | c }},
		{"a & b & ~c = 0x40", 0x40, func(a, b, c uint32) uint32 { return a & b &^ c }},
		{"(a & b | c) ^ a = 0x1A", 0x1A, func(a, b, c uint32) uint32 { return (a&b | c) ^ a }},
		{"a = 0xF0", 0xF0, func(a, b, c uint32) uint32 { return a }},
		{"~b = 0x33", 0x33, func(a, b, c uint32) uint32 { return ^b }},
		{"a ^ b ^ c = 0x96", 0x96, func(a, b, c uint32) uint32 { return a ^ b ^ c }},
		{"0 = 0x00", 0x00, func(a, b, c uint32) uint32 { return 0 }},
		{"~0 = 0xFF", 0xFF, func(a, b, c uint32) uint32 { return 0xffffffff }},
	}
	rng := rand.For(t)
	for i := 0; i < 8; i++ {
		lut := uint32(rng.IntN(256))
		cases = append(cases, fcase{fmt.Sprintf("random immLut %#x", lut), lut, func(a, b, c uint32) uint32 {
			var r uint32
			for bit := 0; bit < 32; bit++ {
				idx := (a>>bit&1)<<2 | (b>>bit&1)<<1 | c>>bit&1
				r |= (lut >> idx & 1) << bit
			}
			return r
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// F applied to ta, tb, tc is immLut
			require.Equal(t, tc.lut, tc.f(0xF0, 0xCC, 0xAA)&0xff)
			a, b, c := rng.Uint32(), rng.Uint32(), rng.Uint32()
			body := fmt.Sprintf("mov.b32 %%r1, %d; mov.b32 %%r2, %d; mov.b32 %%r3, %d;\n\tlop3.b32 %%r9, %%r1, %%r2, %%r3, %#x;", a, b, c, tc.lut)
			got := runLanes(t, ptxHeader, "", body, 1)
			require.Equal(t, tc.f(a, b, c), got[0], "a=%#x b=%#x c=%#x", a, b, c)
		})
	}
}

// TestPrmt checks prmt.b32 in the generic form and its six modes against
// the ISA's tables. "The bytes in the two source registers are numbered
// from 0 to 7: {b, a} = {{b7, b6, b5, b4}, {b3, b2, b1, b0}}"; the
// generic form's "3 lsbs of the selection value specify which of the 8
// source bytes should be moved into the target position. The msb defines
// if the byte value should be copied, or if the sign (msb of the byte)
// should be replicated"; "The more specialized form of the permute control
// uses the two lsb's of operand c".
func TestPrmt(t *testing.T) {
	// source byte i is srcByte[i]: a = 0x83624100 (b0 = 0x00, b3 = 0x83), b = 0xF7C6A584
	const a, b = 0x83624100, 0xF7C6A584
	srcByte := [8]uint32{0x00, 0x41, 0x62, 0x83, 0x84, 0xA5, 0xC6, 0xF7}
	// the ISA's table: mode, c[1:0], then the sources of d.b3, d.b2, d.b1, d.b0
	isa := map[string][4][4]uint32{
		"f4e":  {{3, 2, 1, 0}, {4, 3, 2, 1}, {5, 4, 3, 2}, {6, 5, 4, 3}},
		"b4e":  {{5, 6, 7, 0}, {6, 7, 0, 1}, {7, 0, 1, 2}, {0, 1, 2, 3}},
		"rc8":  {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
		"ecl":  {{3, 2, 1, 0}, {3, 2, 1, 1}, {3, 2, 2, 2}, {3, 3, 3, 3}},
		"ecr":  {{0, 0, 0, 0}, {1, 1, 1, 0}, {2, 2, 1, 0}, {3, 2, 1, 0}},
		"rc16": {{1, 0, 1, 0}, {3, 2, 3, 2}, {1, 0, 1, 0}, {3, 2, 3, 2}},
	}
	type pcase struct {
		name string
		mode string
		c    uint32
		want uint32
	}
	var cases []pcase
	for mode, rows := range isa {
		for sel, row := range rows {
			want := srcByte[row[0]]<<24 | srcByte[row[1]]<<16 | srcByte[row[2]]<<8 | srcByte[row[3]]
			// the upper bits of c take no part in a mode
			cases = append(cases, pcase{fmt.Sprintf("%s c[1:0]=%d", mode, sel), "." + mode, 0xabcd1230 | uint32(sel), want})
		}
	}
	cases = append(cases,
		pcase{"generic identity 0x3210", "", 0x3210, a},
		pcase{"generic 0x7654 gives b", "", 0x7654, b},
		pcase{"generic reverse 0x0123", "", 0x0123, 0x00416283},
		// msb set: the selected byte's sign replicated (b3 = 0x83 gives
		// 0xff, b1 = 0x41 gives 0x00); msb clear: b1 copied
		pcase{"generic sign 0xB9B1", "", 0xB9B1, 0xff00ff41},
		// "the permute control consists of four 4-bit selection values": c[31:16] takes no part
		pcase{"generic upper c bits ignored", "", 0xffff4567, 0x84A5C6F7},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf("mov.b32 %%r1, %d; mov.b32 %%r2, %d; mov.b32 %%r3, %d;\n\tprmt.b32%s %%r9, %%r1, %%r2, %%r3;", uint32(a), uint32(b), tc.c, tc.mode)
			require.Equal(t, tc.want, runLanes(t, ptxHeader, "", body, 1)[0], "%#08x", tc.want)
		})
	}
}

// TestFns checks fns.b32 with the ISA's examples and corners of its
// semantics: "find the n-th (given by offset) set bit in mask from the
// base bit, and store the bit position in d. If not found, store
// 0xffffffff in d."
func TestFns(t *testing.T) {
	cases := []struct {
		mask, base uint32
		offset     int32
		want       uint32
		why        string
	}{
		{0xaaaaaaaa, 3, 1, 3, "ISA example: d = 3"},
		{0xaaaaaaaa, 3, -1, 3, "ISA example: d = 3"},
		{0xaaaaaaaa, 2, 1, 3, "ISA example: d = 3"},
		{0xaaaaaaaa, 2, -1, 1, "ISA example: d = 1"},
		{0xaaaaaaaa, 3, 0, 3, "offset 0: base when mask[base] == 1"},
		{0xaaaaaaaa, 2, 0, 0xffffffff, "offset 0: not found when mask[base] == 0"},
		{0xaaaaaaaa, 0, 3, 5, "third set bit upwards from 0: 1, 3, 5"},
		{0xaaaaaaaa, 31, -2, 29, "second set bit downwards from 31: 31, 29"},
		{0xaaaaaaaa, 0, 17, 0xffffffff, "only 16 set bits"},
		{0x80000001, 30, -1, 0, "downwards to bit 0"},
		{0x80000001, 1, 1, 31, "upwards to bit 31"},
		{0, 5, 1, 0xffffffff, "empty mask"},
		{0xffffffff, 0, 32, 31, "the 32nd set bit"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%#x,%d,%d", tc.mask, tc.base, tc.offset), func(t *testing.T) {
			body := fmt.Sprintf("mov.b32 %%r1, %d; mov.b32 %%r2, %d;\n\tfns.b32 %%r9, %%r1, %%r2, %d;", tc.mask, tc.base, tc.offset)
			require.Equal(t, tc.want, runLanes(t, ptxHeader, "", body, 1)[0], tc.why)
		})
	}
}

// TestSetBoolOp checks set.CmpOp.BoolOp.dtype.stype d, a, b, {!}c: "t =
// (a CmpOp b) ? 1 : 0; if (isFloat(dtype)) d = BoolOp(t, c) ? 1.0f :
// 0x00000000; else d = BoolOp(t, c) ? 0xffffffff : 0x00000000;".
func TestSetBoolOp(t *testing.T) {
	one := math.Float32bits(1)
	cases := []struct {
		op   string
		a, b int32
		c    bool
		neg  bool
		want uint32
	}{
		{"set.lt.and.u32.s32", -1, 0, true, false, 0xffffffff},
		{"set.lt.and.u32.s32", -1, 0, false, false, 0},
		{"set.lt.and.u32.s32", -1, 0, false, true, 0xffffffff},
		{"set.lt.and.u32.u32", -1, 0, true, false, 0}, // unsigned: 0xffffffff < 0 is false
		{"set.gt.or.s32.s32", 1, 2, true, false, 0xffffffff},
		{"set.gt.or.s32.s32", 1, 2, false, false, 0},
		{"set.gt.or.s32.s32", 1, 2, true, true, 0},
		{"set.eq.xor.f32.s32", 5, 5, true, false, 0},
		{"set.eq.xor.f32.s32", 5, 5, false, false, one},
		{"set.ne.xor.f32.s32", 5, 5, true, false, one},
		{"set.ne.xor.f32.s32", 5, 5, true, true, 0},
	}
	for _, tc := range cases {
		not := ""
		if tc.neg {
			not = "!"
		}
		t.Run(fmt.Sprintf("%s %d %d %s%v", tc.op, tc.a, tc.b, not, tc.c), func(t *testing.T) {
			body := fmt.Sprintf("mov.b32 %%r1, %d; mov.b32 %%r2, %d; setp.ne.u32 %%p1, %d, 0;\n\t%s %%r9, %%r1, %%r2, %s%%p1;",
				tc.a, tc.b, b2u(tc.c), tc.op, not)
			require.Equal(t, tc.want, runLanes(t, ptxHeader, "", body, 1)[0])
		})
	}
}

// TestMadHiSat checks mad.hi.sat.s32: "d = t<2n-1..n> + c; // for .hi
// variant" with ".sat limits result to MININT..MAXINT (no overflow) for
// the size of the operation".
func TestMadHiSat(t *testing.T) {
	want := func(a, b, c int32) uint32 {
		hi := (int64(a) * int64(b)) >> 32 // t<63..32>
		s := hi + int64(c)
		s = max(min(s, math.MaxInt32), math.MinInt32)
		return uint32(int32(s))
	}
	cases := [][3]int32{
		{math.MaxInt32, math.MaxInt32, math.MaxInt32}, // 0x3fffffff + MAXINT clamps
		{math.MinInt32, math.MaxInt32, math.MinInt32}, // negative high half plus MININT clamps
		{math.MinInt32, math.MinInt32, 0},             // 2^62: high half 2^30
		{-3, 5, 7},                                    // high half -1
		{1 << 20, 1 << 20, -5},
	}
	rng := rand.For(t)
	for i := 0; i < 6; i++ {
		cases = append(cases, [3]int32{int32(rng.Uint32()), int32(rng.Uint32()), int32(rng.Uint32())})
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			body := fmt.Sprintf("mov.b32 %%r1, %d; mov.b32 %%r2, %d; mov.b32 %%r3, %d;\n\tmad.hi.sat.s32 %%r9, %%r1, %%r2, %%r3;", tc[0], tc[1], tc[2])
			require.Equal(t, want(tc[0], tc[1], tc[2]), runLanes(t, ptxHeader, "", body, 1)[0])
		})
	}
}

// TestIsspacep checks isspacep against generic addresses of each state
// space: "Write predicate register p with 1 if generic address a falls
// within the specified state space window and with 0 otherwise", and
// "isspacep.global returns 1 for Kernel Function Parameters as .param
// window is contained within the .global window".
func TestIsspacep(t *testing.T) {
	decls := `
.const .align 4 .b32 cvar[4] = {1, 2, 3, 4};
.global .align 4 .b32 gvar[4];
`
	// each address kind: how the kernel makes its generic address in %rd5
	addrs := map[string]string{
		"shared": "mov.u64 %rd4, svar; cvta.shared.u64 %rd5, %rd4;",
		"local":  "mov.u64 %rd4, lvar; cvta.local.u64 %rd5, %rd4;",
		"global": "mov.u64 %rd4, gvar; cvta.global.u64 %rd5, %rd4;",
		"out":    "add.s64 %rd5, %rd1, 4;", // a pointer parameter's allocation
		"const":  "mov.u64 %rd4, cvar; cvta.const.u64 %rd5, %rd4; add.s64 %rd5, %rd5, 12;",
		"param":  "mov.u64 %rd4, out; cvta.param.u64 %rd5, %rd4;",
	}
	// want[address][space]; the ISA: each address lies in its own space's
	// window, and kernel parameters in .global's too. (A .const variable's
	// address counts as .global here: constant memory is device memory,
	// and the ISA does not say.)
	want := map[string]map[string]bool{
		"shared": {"shared": true, "shared::cta": true},
		"local":  {"local": true},
		"global": {"global": true},
		"out":    {"global": true},
		"const":  {"const": true, "global": true},
		"param":  {"param": true, "param::entry": true, "global": true},
	}
	spaces := []string{"shared", "shared::cta", "local", "global", "const", "param", "param::entry"}
	for kind, mk := range addrs {
		for _, sp := range spaces {
			t.Run(kind+" "+sp, func(t *testing.T) {
				body := "\t.shared .align 4 .b32 svar[4];\n\t.local .align 4 .b32 lvar[4];\n\t" + mk + "\n\tisspacep." + sp + " %p1, %rd5;\n\tselp.u32 %r9, 1, 0, %p1;"
				got := runLanes(t, ptxHeader, decls, body, 1)[0]
				require.Equal(t, b2u(want[kind][sp]), uint64(got))
			})
		}
	}
}

// TestAtomCasB16 checks atom.cas.b16 in global and shared memory: "atom.cas
// ... d = *a; *a = (*a == b) ? c : *a;" on 16 bits, the neighbouring
// halfword untouched.
func TestAtomCasB16(t *testing.T) {
	for _, sp := range []string{"global", "shared"} {
		for _, hit := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s hit=%v", sp, hit), func(t *testing.T) {
				cmp := "0xbeef"
				if !hit {
					cmp = "0xbeee"
				}
				addr := "mov.u64 %rd6, %rd1;" // out[0]: 0xbeef, out[1]: 0x1234
				if sp == "shared" {
					addr = "mov.u64 %rd6, sbuf;"
				}
				body := `	.shared .align 4 .b16 sbuf[2];
	` + addr + `
	mov.b16 %rs1, 0xbeef; st.` + sp + `.b16 [%rd6], %rs1;
	mov.b16 %rs2, 0x1234; st.` + sp + `.b16 [%rd6+2], %rs2;
	mov.b16 %rs3, ` + cmp + `; mov.b16 %rs4, 0xcafe;
	atom.` + sp + `.cas.b16 %rs5, [%rd6], %rs3, %rs4;
	ld.` + sp + `.b16 %rs6, [%rd6]; ld.` + sp + `.b16 %rs7, [%rd6+2];
	cvt.u32.u16 %r1, %rs5; cvt.u32.u16 %r2, %rs6; cvt.u32.u16 %r3, %rs7;
	st.global.u32 [%rd1+4], %r1; st.global.u32 [%rd1+8], %r2; st.global.u32 [%rd1+12], %r3;
	ld.global.u32 %r9, [%rd1];`
				out := make([]byte, 16)
				_, err := runOne(t, laneKernel(ptxHeader, "", body), "k", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, out, false)
				require.NoError(t, err)
				w := u32s(out)
				newv := uint32(0xbeef)
				if hit {
					newv = 0xcafe
				}
				require.Equal(t, uint32(0xbeef), w[1], "d = *a: the old value")
				require.Equal(t, newv, w[2], "*a = (*a == b) ? c : *a")
				require.Equal(t, uint32(0x1234), w[3], "the next halfword untouched")
			})
		}
	}
}

// TestMinMaxXorsignAbs checks min and max .xorsign.abs.f32 against the
// ISA's semantics: "if (.xorsign && !isPresent(c)) { xorsign =
// getSignBit(a) ^ getSignBit(b); } if (.abs) { a = |a|; b = |b|; } d =
// two_inputs_min(d, a, b) ... if (.xorsign && !isPresent(c) && !isNaN(d))
// { setSignBit(d, xorsign); }", and "If values of both inputs are 0.0,
// then +0.0 > -0.0".
func TestMinMaxXorsignAbs(t *testing.T) {
	const sm86 = ".version 7.8\n.target sm_86\n.address_size 64\n"
	const qnan, canon = 0x7fc00001, 0x7fffffff
	f := func(x float32) uint32 { return math.Float32bits(x) }
	cases := []struct {
		op   string
		a, b uint32
		want uint32
	}{
		{"min.xorsign.abs.f32", f(-2), f(3), f(-2)},
		{"max.xorsign.abs.f32", f(-2), f(3), f(-3)},
		{"min.xorsign.abs.f32", f(-2), f(-3), f(2)},
		{"max.xorsign.abs.f32", f(-2), f(-3), f(3)},
		{"min.xorsign.abs.f32", f(5), f(0.5), f(0.5)},
		{"min.xorsign.abs.f32", 0x80000000, 0, 0x80000000},        // |-0| = |+0|: +0, sign 1^0
		{"max.xorsign.abs.f32", 0x80000000, 0x80000000, 0},        // sign 1^1
		{"min.xorsign.abs.f32", qnan, f(-3), f(-3)},               // min_num ignores the NaN; sign 0^1
		{"min.NaN.xorsign.abs.f32", qnan, f(-3), canon},           // NaN: no sign set
		{"max.xorsign.abs.f32", qnan | 1<<31, qnan, canon},        // both NaN
		{"max.ftz.xorsign.abs.f32", 0x80000001, f(0), 0x80000000}, // -subnormal flushed to -0
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %#x %#x", tc.op, tc.a, tc.b), func(t *testing.T) {
			body := fmt.Sprintf("mov.b32 %%f1, %d; mov.b32 %%f2, %d;\n\t%s %%f3, %%f1, %%f2;\n\tmov.b32 %%r9, %%f3;", tc.a, tc.b, tc.op)
			require.Equal(t, tc.want, runLanes(t, sm86, "", body, 1)[0], "%#08x", tc.want)
		})
	}
}
