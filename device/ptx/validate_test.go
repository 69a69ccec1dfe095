package ptx

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// loadOne parses a module whose kernel holds inst alone, after header;
// it returns the line inst is on.
func loadOne(header, inst string) (string, int) {
	src := header + `.visible .entry k()
{
	.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .f32 %f<8>; .reg .f64 %fd<8>; .reg .pred %p<4>; .reg .b16 %rs<4>;
	` + inst + `
	ret;
}
`
	return src, strings.Count(header, "\n") + 4
}

// TestInvalidPTXRefused: what ptxas refuses is refused at load, naming the
// line, with what the ISA says of the form. Each row's reason quotes or
// follows the ISA's syntax or Target ISA Notes.
func TestInvalidPTXRefused(t *testing.T) {
	const sm70, sm80, sm86 = ptxHeader, ptxHeader80, ".version 7.8\n.target sm_86\n.address_size 64\n"
	const v60sm80 = ".version 6.0\n.target sm_80\n.address_size 64\n"
	cases := []struct {
		name, header, inst, err string
	}{
		// modifiers: the ISA's syntax lists each instruction's
		{"unknown modifier", sm70, "add.rn.bogus.f32 %f1, %f2, %f3;", "unknown modifier .bogus"},
		{"unknown modifier on an integer op", sm70, "and.wide.b32 %r1, %r2, %r3;", ".wide does not apply to and"},
		{"cache policy operand", sm80, "ld.global.L2::cache_hint.u32 %r1, [%rd1], %rd2;", ".L2::cache_hint is not supported on ld"},
		{"ld.shared::cta", sm80, "ld.shared::cta.u32 %r1, [%rd1];", ".shared::cta is not supported on ld"},
		{"shuffle mode on vote", sm70, "vote.sync.bfly.pred %p1, %p2, -1;", ".bfly does not apply to vote"},
		// "add{.rnd}.f64": no .ftz, no .sat
		{".ftz on add.f64", sm70, "add.ftz.f64 %fd1, %fd2, %fd3;", ".ftz needs .f32"},
		{".sat on add.f64", sm70, "add.sat.f64 %fd1, %fd2, %fd3;", ".sat needs .s32 or .f32"},
		{".sat on fma.f64", sm70, "fma.rn.sat.f64 %fd1, %fd2, %fd3, %fd4;", ".sat needs .f32"},
		{".ftz on mul.f64", sm70, "mul.rn.ftz.f64 %fd1, %fd2, %fd3;", ".ftz needs .f32"},
		{".sat on add.u32", sm70, "add.sat.u32 %r1, %r2, %r3;", ".sat needs .s32 or .f32"},
		{"rounding on an integer add", sm70, "add.rn.s32 %r1, %r2, %r3;", "rounding modifier needs a floating-point type"},
		{".ftz on an integer min", sm70, "min.ftz.s32 %r1, %r2, %r3;", ".ftz needs .f32"},
		{"mad.sat without .hi", sm70, "mad.lo.sat.s32 %r1, %r2, %r3, %r4;", ".sat needs .f32, or .hi with .s32"},
		// "fma.rnd{.ftz}{.sat}.f32", "fma.rnd.f64": the rounding is required
		{"fma.f32 without rounding", sm70, "fma.f32 %f1, %f2, %f3, %f4;", "fma needs a rounding modifier"},
		{"mad.f64 without rounding", sm70, "mad.f64 %fd1, %fd2, %fd3, %fd4;", "mad.f64 needs a rounding modifier"},
		{"div.f64 without rounding", sm70, "div.f64 %fd1, %fd2, %fd3;", "div.f64 needs a rounding modifier"},
		{"div.approx.f64", sm70, "div.approx.f64 %fd1, %fd2, %fd3;", ".approx and .full need .f32"},
		// "sqrt.approx{.ftz}.f32", "sqrt.rnd.f64": no sqrt.approx.f64
		{"sqrt.approx.f64", sm70, "sqrt.approx.f64 %fd1, %fd2;", "sqrt.approx needs .f32"},
		{"rcp.approx.f64 without .ftz", sm70, "rcp.approx.f64 %fd1, %fd2;", "rcp.approx needs .f32"},
		{"sqrt.f32 without .approx or rounding", sm70, "sqrt.f32 %f1, %f2;", "sqrt needs .approx or a rounding modifier"},
		{"ex2.f32 without .approx", sm70, "ex2.f32 %f1, %f2;", "ex2 needs .approx"},
		{"sin.approx.f64", sm70, "sin.approx.f64 %fd1, %fd2;", "sin.approx needs .f32"},
		// cvt: "Integer rounding is illegal in all other instances" (than
		// float-to-integer and same-size float-to-float)
		{"integer rounding int to float", sm70, "cvt.rni.f32.s32 %f1, %r1;", "integer rounding .rni of an integer source"},
		{"integer rounding int to int", sm70, "cvt.rzi.s32.s16 %r1, %rs1;", "integer rounding .rzi of an integer source"},
		{"integer rounding f64 to f32", sm70, "cvt.rni.f32.f64 %f1, %fd1;", "integer rounding .rni between floating-point types of different sizes"},
		{"float rounding to an integer", sm70, "cvt.rn.s32.f32 %r1, %f1;", "floating-point rounding .rn to an integer type"},
		// setp: ordered comparisons need a signed, unsigned or float type
		{"setp.lt.b32", sm70, "setp.lt.b32 %p1, %r1, %r2;", "ordered comparison .lt of bit-size type .b32"},
		{"setp.hs.b64", sm70, "setp.hs.b64 %p1, %rd1, %rd2;", "ordered comparison .hs of bit-size type .b64"},
		{"set.gt.u32.b16", sm70, "set.gt.u32.b16 %r1, %rs1, %rs2;", "ordered comparison .gt of bit-size type .b16"},
		{"setp.ftz.f64", sm70, "setp.lt.ftz.f64 %p1, %fd1, %fd2;", ".ftz needs .f32 operands"},
		{"min.NaN.f64", sm80, "min.NaN.f64 %fd1, %fd2, %fd3;", ".NaN needs .f32"},
		{"min.xorsign without .abs", sm86, "min.xorsign.f32 %f1, %f2, %f3;", ".xorsign needs .abs and .f32"},
		// forms above the module's .target or .version
		{"max.NaN on sm_70", sm70, "max.NaN.f32 %f1, %f2, %f3;", "max.NaN requires .target sm_80 or higher (the module's is sm_70)"},
		{"min.NaN on sm_70", sm70, "min.NaN.f32 %f1, %f2, %f3;", "min.NaN requires .target sm_80"},
		{"min.xorsign.abs on sm_80", sm80, "min.xorsign.abs.f32 %f1, %f2, %f3;", "min.xorsign requires .target sm_86 or higher (the module's is sm_80)"},
		{"fma .relu on sm_70", sm70, "fma.rn.relu.f16 %rs1, %rs2, %rs3, %rs1;", "fma.relu requires .target sm_80"},
		{"cvt .relu to a 32-bit float", sm80, "cvt.rn.relu.f32.f16 %f1, %rs1;", ".relu on cvt needs a .f16, .f16x2, .bf16 or .bf16x2 destination"},
		{"redux.sync on sm_70", sm70, "redux.sync.add.u32 %r1, %r2, -1;", "redux requires .target sm_80"},
		{"redux.sync in PTX 6.0", v60sm80, "redux.sync.add.u32 %r1, %r2, -1;", "redux requires .version 7.0 or higher (the module's is 6.0)"},
		{"activemask in PTX 6.0", ".version 6.0\n.target sm_70\n", "activemask.b32 %r1;", "activemask requires .version 6.2"},
		{"atom.cas.b16 in PTX 6.0", ".version 6.0\n.target sm_70\n", "atom.global.cas.b16 %rs1, [%rd1], %rs2, %rs3;", "atom.cas.b16 requires .version 6.3"},
		{"tanh on sm_70", sm70, "tanh.approx.f32 %f1, %f2;", "tanh requires .target sm_75"},
		{"isspacep.shared::cluster on sm_80", sm80, "isspacep.shared::cluster %p1, %rd1;", "isspacep.shared::cluster requires .target sm_90"},
		// "dp2a.mode.atype.btype", "bmsk.mode.b32", "szext.mode.type", "mad24.mode.type",
		// "mad24.hi.sat.s32": the modes are required, the types the syntax's
		{"dp2a without a mode", sm70, "dp2a.u32.u32 %r1, %r2, %r3, %r4;", "dp2a needs one of .lo and .hi"},
		{"dp4a.b32", sm70, "dp4a.b32.u32 %r1, %r2, %r3, %r4;", "dp4a needs two types of .u32 and .s32"},
		{"dp4a with one type", sm70, "dp4a.u32 %r1, %r2, %r3, %r4;", "dp4a needs two types of .u32 and .s32"},
		{"bmsk without a mode", sm70, "bmsk.b32 %r1, %r2, %r3;", "bmsk needs one of .clamp and .wrap"},
		{"bmsk.u32", sm70, "bmsk.wrap.u32 %r1, %r2, %r3;", "bmsk takes .b32"},
		{"szext.b32", sm70, "szext.clamp.b32 %r1, %r2, %r3;", "szext takes .u32 or .s32"},
		{"szext with both modes", sm70, "szext.clamp.wrap.s32 %r1, %r2, %r3;", "szext needs one of .clamp and .wrap"},
		{"mul24 without a mode", sm70, "mul24.u32 %r1, %r2, %r3;", "mul24 needs one of .lo and .hi"},
		{"mad24.lo.sat", sm70, "mad24.lo.sat.s32 %r1, %r2, %r3, %r4;", ".sat needs mad24.hi.s32"},
		{"mad24.hi.sat.u32", sm70, "mad24.hi.sat.u32 %r1, %r2, %r3, %r4;", ".sat needs mad24.hi.s32"},
		{"bmsk in PTX 7.5", ".version 7.5\n.target sm_70\n", "bmsk.wrap.b32 %r1, %r2, %r3;", "bmsk requires .version 7.6"},
		{"dp4a on sm_60", ".version 7.8\n.target sm_60\n", "dp4a.u32.u32 %r1, %r2, %r3, %r4;", "dp4a requires .target sm_61"},
		// operand sizes: "ld, st, and cvt instructions permit source and destination data
		// operands to be wider than the instruction-type size", no other instruction
		{"add.s32 into a 64-bit register", sm70, "add.s32 %rd1, %r2, %r3;", "operand %rd1 is a .b64 register, the instruction's operand there is .s32"},
		{"add.s64 of a 32-bit register", sm70, "add.s64 %rd1, %r2, %rd3;", "operand %r2 is a .b32 register"},
		{"mul.wide.s32 into a 32-bit register", sm70, "mul.wide.s32 %r1, %r2, %r3;", "operand %r1 is a .b32 register, the instruction's operand there is .b64"},
		{"add.s32 into a predicate", sm70, "add.s32 %p1, %r2, %r3;", "operand %p1 is a .pred register"},
		{"setp into a 32-bit register", sm70, "setp.eq.s32 %r1, %r2, %r3;", "operand %r1 is a .b32 register, the instruction's operand there is .pred"},
		{"selp with a 32-bit selector", sm70, "selp.b32 %r1, %r2, %r3, %r4;", "operand %r4 is a .b32 register, the instruction's operand there is .pred"},
		{"cvt.u64.u32 into a 32-bit register", sm70, "cvt.u64.u32 %r1, %r2;", "operand %r1 is a .b32 register, the instruction's operand there is .u64"},
		{"popc.b64 of a 32-bit register", sm70, "popc.b64 %r1, %r2;", "operand %r2 is a .b32 register"},
		{"ld.global.u32 into a 16-bit register", sm70, "ld.global.u32 %rs1, [%rd1];", "operand %rs1 is a .b16 register, the instruction's operand there is .u32"},
		{"ld.global.v2.u32 with a 16-bit element", sm70, "ld.global.v2.u32 {%r1, %rs1}, [%rd1];", "operand %rs1 is a .b16 register"},
		{"st.global.u64 of a 32-bit register", sm70, "st.global.u64 [%rd1], %r1;", "operand %r1 is a .b32 register, the instruction's operand there is .u64"},
		{"atom.add.u64 into a 32-bit register", sm70, "atom.global.add.u64 %r1, [%rd1], %rd2;", "operand %r1 is a .b32 register"},
		{"red.add.u32 of a 64-bit register", sm70, "red.global.add.u32 [%rd1], %rd2;", "operand %rd2 is a .b64 register"},
		{"mov.u32 into a 64-bit register", sm70, "mov.u32 %rd1, %r1;", "operand %rd1 is a .b64 register, the instruction's operand there is .u32"},
		{"mov.pred of a 32-bit register", sm70, "mov.pred %p1, %r1;", "operand %r1 is a .b32 register, the instruction's operand there is .pred"},
		{"activemask into a 64-bit register", sm70, "activemask.b32 %rd1;", "operand %rd1 is a .b64 register"},
		{"redux.sync into a 64-bit register", sm80, "redux.sync.add.u32 %rd1, %r2, -1;", "operand %rd1 is a .b64 register"},
		{"match.any.sync.b32 into a 64-bit register", sm70, "match.any.sync.b32 %rd1, %r2, -1;", "operand %rd1 is a .b64 register"},
		{"cvta into a 32-bit register", sm70, "cvta.to.global.u64 %r1, %rd1;", "operand %r1 is a .b32 register"},
		{"lop3 into a 64-bit register", sm70, "lop3.b32 %rd1, %r2, %r3, %r4, 0x96;", "operand %rd1 is a .b64 register"},
		{"bar.warp.sync of a 64-bit mask", sm70, "bar.warp.sync %rd1;", "operand %rd1 is a .b64 register"},
		{"add.cc.u32 into a 64-bit register", sm70, "add.cc.u32 %rd1, %r1, %r2;", "operand %rd1 is a .b64 register"},
		{"vote.sync.all of a 32-bit register", sm70, "vote.sync.all.pred %p1, %r1, -1;", "operand %r1 is a .b32 register, the instruction's operand there is .pred"},
		{"vote.sync.any.b32", sm70, "vote.sync.any.b32 %r1, %p1, -1;", "vote.sync.all, .any and .uni take .pred"},
		{"vote.sync.ballot.u32", sm70, "vote.sync.ballot.u32 %r1, %p1, -1;", "vote.sync.ballot takes .b32"},
		{"shfl.sync.idx.b64", sm70, "shfl.sync.idx.b64 %rd1, %rd2, %r3, 0x1f, -1;", "shfl.sync takes .b32"},
		// bar: "a logical barrier resource ... with value 0 through 15"; "the value in b
		// must be a multiple of warp size"
		{"bar.sync 16", sm70, "bar.sync 16;", "barrier 16 is not 0..15"},
		{"bar.sync with 33 threads", sm70, "bar.sync 1, 33;", "thread count 33 is not a multiple of the warp size"},
		{"bar.red with 33 threads", sm70, "bar.red.popc.u32 %r1, 0, 33, %p1;", "thread count 33 is not a multiple of the warp size"},
		{"barrier.sync with 2048 threads", sm70, "barrier.sync 1, 2048;", "thread count 2048 is not a multiple of the warp size of at most 1024"},
		{"vadd with two types", sm70, "vadd.s32.s32 %r1, %r2, %r3;", "vadd takes three types of .u32 and .s32 (dtype, atype, btype)"},
		{"vadd.b32", sm70, "vadd.b32.s32.s32 %r1, %r2, %r3;", "vadd takes three types of .u32 and .s32"},
		// instruction types: the ISA's syntax lists each instruction's ("Unexpected
		// instruction types specified", ptxas says of others)
		{"popc.u32", sm70, "popc.u32 %r1, %r2;", "popc takes .b32, .b64, not .u32"},
		{"bfe.b32", sm70, "bfe.b32 %r1, %r2, 1, 2;", "bfe takes .u32, .u64, .s32, .s64, not .b32"},
		{"abs.u32", sm70, "abs.u32 %r1, %r2;", "abs takes .s16, .s32, .s64"},
		{"xor.u32", sm70, "xor.u32 %r1, %r2, %r3;", "xor takes .pred, .b16, .b32, .b64, not .u32"},
		{"add.b32", sm70, "add.b32 %r1, %r2, %r3;", "not .b32"},
		{"add.u8", sm70, "add.u8 %rs1, %rs2, %rs3;", "not .u8"},
		{"selp.pred", sm70, "selp.pred %p1, %p2, %p3, %p1;", "selp takes .b16"},
		{"slct with a .u32 selector", sm70, "slct.u32.u32 %r1, %r2, %r3, %r4;", "slct's selector c is .s32 or .f32"},
		{"activemask.u32", sm70, "activemask.u32 %r1;", "activemask takes .b32, not .u32"},
		{"prmt.b64", sm70, "prmt.b64 %rd1, %rd2, %rd3, %rd4;", "prmt takes .b32, not .b64"},
		{"shf.l.wrap.b64", sm70, "shf.l.wrap.b64 %rd1, %rd2, %rd3, %r4;", "shf takes .b32, not .b64"},
		{"shf without a mode", sm70, "shf.l.b32 %r1, %r2, %r3, %r4;", "shf needs one of .l and .r and one of .clamp and .wrap"},
		// the no-ops' modifiers: "membar.level", "fence{.sem}.scope", "prefetch{.space}.level"
		{"membar without a level", sm70, "membar;", "membar needs one level"},
		{"membar.bogus", sm70, "membar.bogus;", "unknown modifier .bogus"},
		{"membar with two levels", sm70, "membar.cta.gl;", "membar needs one level"},
		{"fence.bogus", sm70, "fence.bogus;", "unknown modifier .bogus"},
		{"prefetch without a level", sm70, "prefetch.global [%rd1];", "prefetch needs a level"},
		{"fence.proxy.alias in PTX 7.0", ".version 7.0\n.target sm_70\n", "fence.proxy.alias;", "fence.proxy.alias requires .version 7.5"},
		{"fence.acq_rel.cluster on sm_80", sm80, "fence.acq_rel.cluster;", "fence.cluster requires .target sm_90"},
		{"fence.sc.gpu on sm_60", ".version 7.8\n.target sm_60\n", "fence.sc.gpu;", "fence requires .target sm_70"},
		{"prefetch .L2::evict_last on sm_70", sm70, "prefetch.global.L2::evict_last [%rd1];", "requires .target sm_80"},
		{"prefetchu.L2", sm70, "prefetchu.L2 [%rd1];", ".L2 does not apply to prefetchu"},
		// "cvt.pack.sat.convertType.abType d, a, b" (.u16, .s16), "...abType.cType d, a, b, c"
		{"cvt.pack without .sat", sm80, "cvt.pack.s16.s32 %r1, %r2, %r3;", "cvt.pack is cvt.pack.sat.convertType.s32{.b32}"},
		{"cvt.pack.sat.u8 without a cType", sm80, "cvt.pack.sat.u8.s32 %r1, %r2, %r3;", "takes a .b32 cType"},
		{"cvt.pack.sat.s16 with a cType", sm80, "cvt.pack.sat.s16.s32.b32 %r1, %r2, %r3, %r4;", "takes no cType"},
		{"cvt.pack.sat.u32", sm80, "cvt.pack.sat.u32.s32 %r1, %r2, %r3;", "cvt.pack's convertType is"},
		{"cvt.pack on sm_70", sm70, "cvt.pack.sat.s16.s32 %r1, %r2, %r3;", "cvt.pack requires .target sm_72"},
		// operands
		{"lop3 immLut out of range", sm70, "lop3.b32 %r1, %r2, %r3, %r4, 256;", "immLut must be an integer constant from 0 to 255"},
		{"lop3 immLut a register", sm70, "lop3.b32 %r1, %r2, %r3, %r4, %r5;", "immLut must be an integer constant"},
		{"match.any with a predicate", sm70, "match.any.sync.b32 %r1|%p1, %r2, -1;", "only match.all has a predicate destination"},
		{"redux.sync.add.b32", sm80, "redux.sync.add.b32 %r1, %r2, -1;", "take .u32 or .s32"},
		{"redux.sync.and.u32", sm80, "redux.sync.and.u32 %r1, %r2, -1;", "take .b32"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, line := loadOne(tc.header, tc.inst)
			_, err := Parse(src)
			require.Error(t, err, "%s loaded", tc.inst)
			require.Contains(t, err.Error(), tc.err)
			require.Contains(t, err.Error(), fmt.Sprintf("ptx: line %d: ", line), "the error names the instruction's line")
		})
	}
}

// TestLoadsAtItsTarget: the forms TestInvalidPTXRefused refuses load in the
// form and at the target the ISA gives them.
func TestLoadsAtItsTarget(t *testing.T) {
	const sm70, sm80, sm86 = ptxHeader, ptxHeader80, ".version 7.8\n.target sm_86\n.address_size 64\n"
	cases := []struct{ header, inst string }{
		{sm70, "add.rn.f32 %f1, %f2, %f3;"},
		{sm70, "add.rn.ftz.sat.f32 %f1, %f2, %f3;"},
		{sm70, "add.rn.f64 %fd1, %fd2, %fd3;"},
		{sm70, "add.f64 %fd1, %fd2, %fd3;"},
		{sm70, "add.sat.s32 %r1, %r2, %r3;"},
		{sm70, "fma.rn.f64 %fd1, %fd2, %fd3, %fd4;"},
		{sm70, "mad.rn.f64 %fd1, %fd2, %fd3, %fd4;"},
		{sm70, "mad.hi.sat.s32 %r1, %r2, %r3, %r4;"},
		{sm70, "div.rn.f64 %fd1, %fd2, %fd3;"},
		{sm70, "div.full.ftz.f32 %f1, %f2, %f3;"},
		{sm70, "sqrt.rn.f64 %fd1, %fd2;"},
		{sm70, "sqrt.approx.ftz.f32 %f1, %f2;"},
		{sm70, "rcp.approx.ftz.f64 %fd1, %fd2;"},
		{sm70, "rsqrt.approx.f64 %fd1, %fd2;"},
		{sm70, "ex2.approx.ftz.f32 %f1, %f2;"},
		{sm70, "cvt.rn.f32.s32 %f1, %r1;"},
		{sm70, "cvt.rni.f32.f32 %f1, %f2;"},
		{sm70, "cvt.rzi.s32.f32 %r1, %f1;"},
		{sm70, "cvt.rn.f32.f64 %f1, %fd1;"},
		{sm70, "cvt.f64.f32 %fd1, %f1;"},
		{sm70, "cvt.s32.s16 %r1, %rs1;"},
		{sm70, "setp.lt.s32 %p1, %r1, %r2;"},
		{sm70, "setp.lt.u32 %p1, %r1, %r2;"},
		{sm70, "setp.hs.u64 %p1, %rd1, %rd2;"},
		{sm70, "setp.eq.b32 %p1, %r1, %r2;"},
		{sm70, "setp.ne.b64 %p1, %rd1, %rd2;"},
		{sm70, "setp.ltu.ftz.f32 %p1, %f1, %f2;"},
		{sm70, "set.eq.u32.b16 %r1, %rs1, %rs2;"},
		{sm80, "max.NaN.f32 %f1, %f2, %f3;"},
		{sm80, "min.NaN.f32 %f1, %f2, %f3;"},
		{sm80, "redux.sync.add.u32 %r1, %r2, -1;"},
		{sm80, "redux.sync.xor.b32 %r1, %r2, -1;"},
		{sm70, "match.any.sync.b32 %r1, %r2, -1;"},
		{sm70, "match.all.sync.b64 %r1|%p1, %rd2, -1;"},
		{sm70, "activemask.b32 %r1;"},
		{sm70, "lop3.b32 %r1, %r2, %r3, %r4, 0x96;"},
		{sm70, "fns.b32 %r1, %r2, %r3, -1;"},
		{sm70, "prmt.b32.rc16 %r1, %r2, %r3, %r4;"},
		{sm70, "set.lt.and.f32.s32 %r1, %r2, %r3, !%p1;"},
		{sm70, "isspacep.global %p1, %rd1;"},
		{sm70, "atom.shared.cas.b16 %rs1, [%rd1], %rs2, %rs3;"},
		{sm70, "ld.global.nc.L1::no_allocate.v2.u32 {%r1, %r2}, [%rd1];"},
		{sm70, "atom.global.acq_rel.gpu.add.u32 %r1, [%rd1], 1;"},
		{sm86, "tanh.approx.f32 %f1, %f2;"},
		{sm70, "dp4a.s32.u32 %r1, %r2, %r3, %r4;"},
		{sm70, "dp2a.hi.u32.s32 %r1, %r2, %r3, %r4;"},
		{sm70, "bmsk.clamp.b32 %r1, %r2, 3;"},
		{sm70, "szext.wrap.s32 %r1, %r2, %r3;"},
		{sm70, "mad24.hi.sat.s32 %r1, %r2, %r3, %r4;"},
		{sm70, "mul24.lo.u32 %r1, %r2, %r3;"},
		{sm70, "mul.wide.s32 %rd1, %r2, %r3;"},
		{sm70, "mad.wide.u32 %rd1, %r2, %r3, %rd4;"},
		{sm70, "add.f32 %f1, %r2, %f3;"},
		{sm70, "popc.b64 %r1, %rd2;"},
		{sm70, "bfe.u64 %rd1, %rd2, %r3, %r4;"},
		{sm70, "bfi.b64 %rd1, %rd2, %rd3, %r4, %r5;"},
		{sm70, "shl.b64 %rd1, %rd2, %r3;"},
		{sm70, "cvt.u16.u32 %rs1, %rd2;"},
		{sm70, "cvt.u32.u16 %r1, %r2;"},
		{sm70, "testp.finite.f64 %p1, %fd1;"},
		{sm70, "setp.lt.s32 %p1|%p2, %r1, %r2;"},
		{sm70, "shr.s32 %r1, %r2, 3;"},
		{sm70, "not.pred %p1, %p2;"},
		{sm70, "slct.f32.s32 %f1, %f2, %f3, %r4;"},
		{sm70, "shf.r.clamp.b32 %r1, %r2, %r3, %r4;"},
		{sm70, "membar.gl;"},
		{sm70, "membar.sys;"},
		{sm70, "fence.sc.cta;"},
		{sm70, "fence.acq_rel.gpu;"},
		{sm70, "fence.proxy.alias;"},
		{sm70, "prefetch.global.L2 [%rd1];"},
		{sm70, "prefetch.L1 [%rd1];"},
		{sm80, "prefetch.global.L2::evict_last [%rd1];"},
		{sm70, "prefetchu.L1 [%rd1];"},
		{sm80, "cvt.pack.sat.u16.s32 %r1, %r2, %r3;"},
		{sm70, "ld.global.u8 %r1, [%rd1];"},
		{sm70, "vmin.u32.u32.s32.sat %r1, %r2, 7;"},
		{sm70, "vabsdiff.s32.u32.u32 %r1, %r2, %r3;"},
		{sm70, "bar.sync 15, 1024;"},
		{sm70, "bar.sync %r1, %r2;"},
		{sm70, "bar.red.popc.u32 %r1, 0, 64, !%p1;"},
		{sm70, "vote.sync.ballot.b32 %r1, !%p1, -1;"},
		{sm70, "shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 0x1f, -1;"},
		{sm70, "match.any.sync.b64 %r1, %rd2, -1;"},
		{sm70, "mov.b32 %r1, %f1;"},
		{sm70, "mov.u32 %r1, %tid.x;"},
		{sm70, "st.global.u16 [%rd1], %r1;"},
		{sm70, "ld.global.v2.f32 {%f1, %f2}, [%rd1];"},
		{sm70, "atom.global.cas.b32 %r1, [%rd1], %r2, %r3;"},
		{sm80, "cvt.pack.sat.s4.s32.b32 %r1, %r2, %r3, %r4;"},
	}
	for _, tc := range cases {
		t.Run(tc.inst, func(t *testing.T) {
			src, _ := loadOne(tc.header, tc.inst)
			_, err := Parse(src)
			require.NoError(t, err)
		})
	}
}

// TestShippedPTXLoads: every PTX module the repository ships loads.
func TestShippedPTXLoads(t *testing.T) {
	for _, f := range []string{
		"../../kernels/kernels.ptx",
		"../../examples/ownkernels/saxpy.ptx",
		"../../examples/ownkernels/stencil.ptx",
		"testdata/samples.ptx",
		"../kernel/testdata/faults.ptx",
	} {
		t.Run(f, func(t *testing.T) {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			_, err = Parse(string(src))
			require.NoError(t, err)
		})
	}
}
