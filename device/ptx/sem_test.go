package ptx

import (
	"encoding/binary"
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const ptxHeader = ".version 7.8\n.target sm_70\n.address_size 64\n"

// ptxHeader80 is the header of a module with sm_80 forms (max.NaN, redux.sync).
const ptxHeader80 = ".version 7.8\n.target sm_80\n.address_size 64\n"

// runOne parses src (after ptxHeader unless it has its own .version) and
// runs kernel name with one pointer parameter, out.
func runOne(t *testing.T, src, name string, grid, block [3]uint32, out []byte, noRace bool) (Stats, error) {
	t.Helper()
	if !strings.HasPrefix(src, ".version") {
		src = ptxHeader + src
	}
	m, err := Parse(src)
	require.NoError(t, err, "parse %s", name)
	k, ok := m.Kernel(name)
	require.True(t, ok)
	h := &hostMem{bufs: [][]byte{out}}
	params := binary.LittleEndian.AppendUint64(nil, addr(out))
	st, err := k.Run(Launch{Grid: grid, Block: block, Params: params, Global: h, NoRaceCheck: noRace})
	runtime.KeepAlive(out)
	return st, err
}

func u32s(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func TestIntegerAndConversionEdges(t *testing.T) {
	src := ptxHeader80 + `
.visible .entry sem(.param .u64 out)
{
	.reg .b32 %r<20>; .reg .b64 %rd<4>; .reg .f32 %f<8>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, 7; mov.u32 %r2, 0;
	div.u32 %r3, %r1, %r2;   st.global.u32 [%rd1], %r3;
	rem.u32 %r4, %r1, %r2;   st.global.u32 [%rd1+4], %r4;
	div.s32 %r5, %r1, %r2;   st.global.u32 [%rd1+8], %r5;
	mov.f32 %f1, 0f7F800000;
	cvt.rzi.s32.f32 %r6, %f1; st.global.u32 [%rd1+12], %r6;
	mov.f32 %f2, 0f7FC00000;
	cvt.rzi.s32.f32 %r7, %f2; st.global.u32 [%rd1+16], %r7;
	mov.f32 %f3, 0fC2C80000;
	cvt.rzi.u32.f32 %r8, %f3; st.global.u32 [%rd1+20], %r8;
	min.f32 %f4, %f2, %f3; st.global.f32 [%rd1+24], %f4;
	max.NaN.f32 %f5, %f2, %f3; st.global.f32 [%rd1+28], %f5;
	mov.u32 %r9, 0x80000000; mov.u32 %r10, -1;
	div.s32 %r11, %r9, %r10; st.global.u32 [%rd1+32], %r11;
	bfe.u32 %r12, 0xF0F0, 4, 8; st.global.u32 [%rd1+36], %r12;
	bfe.s32 %r13, 0xF0F0, 8, 8; st.global.u32 [%rd1+40], %r13;
	mov.f32 %f6, 0f3FC00000;
	cvt.rni.s32.f32 %r14, %f6; st.global.u32 [%rd1+44], %r14;
	neg.f32 %f6, %f6;
	cvt.rmi.s32.f32 %r15, %f6; st.global.u32 [%rd1+48], %r15;
	mov.f32 %f7, 0f40400000;
	cvt.sat.f32.f32 %f7, %f7; st.global.f32 [%rd1+52], %f7;
	add.sat.s32 %r16, %r9, %r10; st.global.u32 [%rd1+56], %r16;
	ret;
}`
	out := make([]byte, 60)
	_, err := runOne(t, src, "sem", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, out, false)
	require.NoError(t, err)
	want := []uint32{
		0xffffffff, 7, 0xffffffff, // division by zero: all ones; remainder: the dividend
		0x7fffffff, 0, 0, // cvt saturates: +inf -> INT_MAX, NaN -> 0, -100 -> 0 unsigned
		math.Float32bits(-100), 0x7fffffff, // min ignores a NaN; max.NaN gives the canonical NaN
		0x80000000,       // INT_MIN / -1 wraps
		0x0f, 0xfffffff0, // bfe unsigned and signed
		2, 0xfffffffe, // 1.5 to nearest even; -1.5 down
		math.Float32bits(1), // .sat clamps to 1
		0x80000000,          // add.sat clamps
	}
	require.Equal(t, want, u32s(out))
}

func TestShufflesVotesDivergence(t *testing.T) {
	src := `
.visible .entry warpops(.param .u64 out)
{
	.reg .b32 %r<30>; .reg .b64 %rd<6>; .reg .pred %p<6>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 48;
	add.s64 %rd3, %rd1, %rd2;
	mul.lo.u32 %r2, %r1, 10;
	shfl.sync.idx.b32 %r3, %r2, 5, 31, -1;
	shfl.sync.up.b32 %r4|%p1, %r2, 3, 0, -1;
	shfl.sync.down.b32 %r5, %r2, 1, 31, -1;
	shfl.sync.bfly.b32 %r6, %r2, 2, 31, -1;
	and.b32 %r7, %r1, 1;
	setp.eq.u32 %p2, %r7, 1;
	vote.sync.ballot.b32 %r8, %p2, -1;
	vote.sync.all.pred %p3, %p2, -1;
	selp.u32 %r9, 1, 0, %p3;
	vote.sync.any.pred %p4, %p2, -1;
	selp.u32 %r10, 1, 0, %p4;
	st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};
	st.global.v4.u32 [%rd3+16], {%r8, %r9, %r10, %r10};
	@%p2 bra $ODD;
	mov.u32 %r11, 0;
	activemask.b32 %r12;
	bra.uni $JOIN;
$ODD:
	shfl.sync.bfly.b32 %r11, %r2, 2, 31, 0xaaaaaaaa;
	activemask.b32 %r12;
$JOIN:
	activemask.b32 %r13;
	st.global.v4.u32 [%rd3+32], {%r11, %r12, %r13, %r13};
	ret;
}`
	out := make([]byte, 32*48)
	_, err := runOne(t, src, "warpops", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, out, false)
	require.NoError(t, err)
	w := u32s(out)
	for l := uint32(0); l < 32; l++ {
		up := l * 10
		if l >= 3 {
			up = (l - 3) * 10
		}
		down := uint32(310)
		if l < 31 {
			down = (l + 1) * 10
		}
		odd := l&1 == 1
		var r11, r12 uint32 = 0, 0x55555555
		if odd {
			r11, r12 = (l^2)*10, 0xaaaaaaaa
		}
		want := []uint32{50, up, down, (l ^ 2) * 10, 0xaaaaaaaa, 0, 1, 1, r11, r12, 0xffffffff, 0xffffffff}
		require.Equal(t, want, w[12*l:12*l+12], "lane %d", l)
	}
}

func faultOf(t *testing.T, err error) *Fault {
	t.Helper()
	var f *Fault
	require.True(t, errors.As(err, &f), "a *Fault, got %v", err)
	return f
}

// TestBarrierHang: half a block waits at barrier 0 while the other half
// waits at barrier 1, each expecting the whole block: neither can
// complete. (Threads that exit instead release a barrier:
// TestEarlyExitThenSync.)
func TestBarrierHang(t *testing.T) {
	src := `
.visible .entry hang(.param .u64 out)
{
	.reg .b32 %r<3>; .reg .pred %p<2>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 32;
	@%p1 bra $SKIP;
	bar.sync 0;
	ret;
$SKIP:
	bar.sync 1;
	ret;
}`
	_, err := runOne(t, src, "hang", [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, make([]byte, 8), false)
	require.Error(t, err)
	f := faultOf(t, err)
	require.Equal(t, BarrierHang, f.Kind)
	require.Equal(t, "hang", f.Kernel)
	require.Contains(t, []int{11, 14}, f.Line, "a bar.sync's line")
	require.Contains(t, err.Error(), "64 of the block's 64 threads wait at barrier")
}

// TestBarrierCountNotWarpMultiple: a thread count in a register that is
// not a multiple of the warp size ("the value in b must be a multiple of
// warp size") traps when the barrier runs; at load, an immediate one is
// refused (TestInvalidPTXRefused).
func TestBarrierCountNotWarpMultiple(t *testing.T) {
	src := `
.visible .entry odd(.param .u64 out)
{
	.reg .b32 %r<3>;
	mov.u32 %r1, 33;
	bar.sync 1, %r1;
	ret;
}`
	_, err := runOne(t, src, "odd", [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, make([]byte, 8), false)
	require.Error(t, err)
	f := faultOf(t, err)
	require.Equal(t, Trap, f.Kind)
	require.Contains(t, err.Error(), "barrier 1: thread count 33 is not a multiple of the warp size")
}

func TestOutOfBoundsWrite(t *testing.T) {
	src := `
.visible .entry oob(.param .u64 out)
{
	.reg .b32 %r<3>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	ret;
}`
	out := make([]byte, 31*4)
	_, err := runOne(t, src, "oob", [3]uint32{2, 1, 1}, [3]uint32{32, 1, 1}, out, false)
	f := faultOf(t, err)
	require.Equal(t, IllegalAddress, f.Kind)
	require.Equal(t, "oob", f.Kernel)
	require.Equal(t, 12, f.Line)
	require.Equal(t, Thread{Block: [3]uint32{0, 0, 0}, Thread: [3]uint32{31, 0, 0}}, f.Thread)
	require.True(t, f.Write)
	require.True(t, f.HasAlloc)
	require.Equal(t, addr(out), f.AllocBase)
	require.Equal(t, 124, f.AllocSize)
	require.Equal(t, int64(4), f.Past)
	require.Contains(t, err.Error(), "4 bytes past its end")
	require.Equal(t, uint32(30), u32s(out)[30], "threads before the fault wrote")
}

func TestMisaligned(t *testing.T) {
	src := `
.visible .entry mis(.param .u64 out)
{
	.reg .b32 %r<3>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	st.global.u32 [%rd1+2], %r1;
	ret;
}`
	_, err := runOne(t, src, "mis", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, make([]byte, 16), false)
	f := faultOf(t, err)
	require.Equal(t, MisalignedAddress, f.Kind)
	require.Equal(t, 9, f.Line)
}

func TestSharedRace(t *testing.T) {
	racy := `
.visible .entry race(.param .u64 out)
{
	.shared .align 4 .b8 s[4];
	.reg .b32 %r<3>; .reg .b64 %rd<3>;
	mov.u32 %r1, %tid.x;
	st.shared.u32 [s], %r1;
	ret;
}`
	_, err := runOne(t, racy, "race", [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, make([]byte, 8), false)
	f := faultOf(t, err)
	require.Equal(t, SharedRace, f.Kind)
	require.Equal(t, uint32(32), f.Thread.Thread[0], "the first thread of the second warp")
	require.Equal(t, 10, f.OtherLine)
	require.Less(t, f.Other.Thread[0], uint32(32))
	_, err = runOne(t, racy, "race", [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, make([]byte, 8), true)
	require.NoError(t, err, "the check is off")

	ordered := `
.visible .entry ordered(.param .u64 out)
{
	.shared .align 4 .b8 s[4];
	.reg .b32 %r<3>; .reg .b64 %rd<4>; .reg .pred %p<2>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra $W;
	st.shared.u32 [s], 42;
$W:
	bar.sync 0;
	ld.shared.u32 %r2, [s];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r2;
	ret;
}`
	out := make([]byte, 64*4)
	_, err = runOne(t, ordered, "ordered", [3]uint32{1, 1, 1}, [3]uint32{64, 1, 1}, out, false)
	require.NoError(t, err)
	for i, v := range u32s(out) {
		require.Equal(t, uint32(42), v, "thread %d read the value written before the barrier", i)
	}
}

func TestAtomics(t *testing.T) {
	src := `
.visible .entry atoms(.param .u64 out)
{
	.shared .align 4 .b8 cnt[8];
	.reg .b32 %r<10>; .reg .b64 %rd<4>; .reg .pred %p<3>; .reg .f32 %f<2>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra $A;
	st.shared.u32 [cnt], 0;
	st.shared.u32 [cnt+4], 1000;
$A:
	bar.sync 0;
	atom.shared.add.u32 %r2, [cnt], 1;
	atom.shared.min.u32 %r3, [cnt+4], %r1;
	sub.s32 %r4, %r1, 64;
	atom.global.max.s32 %r5, [%rd1+4], %r4;
	atom.global.add.f32 %f1, [%rd1+8], 0f3F800000;
	atom.global.inc.u32 %r6, [%rd1+12], 1000;
	red.global.add.u64 [%rd1+16], 1;
	atom.global.cas.b32 %r7, [%rd1+24], %r1, 5000;
	bar.sync 0;
	@%p1 bra $B;
	ld.shared.u32 %r8, [cnt];
	atom.global.add.u32 %r9, [%rd1], %r8;
	ld.shared.u32 %r8, [cnt+4];
	atom.global.add.u32 %r9, [%rd1+28], %r8;
$B:
	ret;
}`
	out := make([]byte, 32)
	binary.LittleEndian.PutUint32(out[4:], 0x80000000) // INT_MIN
	_, err := runOne(t, src, "atoms", [3]uint32{2, 1, 1}, [3]uint32{128, 1, 1}, out, false)
	require.NoError(t, err)
	w := u32s(out)
	require.Equal(t, uint32(256), w[0], "shared counters, summed")
	require.Equal(t, uint32(63), w[1], "max of tid-64")
	require.Equal(t, float32(256), math.Float32frombits(w[2]), "f32 adds")
	require.Equal(t, uint32(256), w[3], "inc below its limit")
	require.Equal(t, uint64(256), binary.LittleEndian.Uint64(out[16:]), "u64 reductions")
	require.Equal(t, uint32(5000), w[6], "cas: thread 0 swapped 0 for 5000")
	require.Equal(t, uint32(0), w[7], "shared min")
}

func TestRefusedAtLoad(t *testing.T) {
	cases := []struct{ name, inst, want string }{
		{"texture", "tex.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [tex, {%f1, %f1}];", "line 9: unsupported instruction tex.2d.v4.f32.f32"},
		{"vote without sync", "vote.ballot.b32 %r1, %p1;", "line 9: vote without .sync is not supported"},
		{"mma", "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r1}, {%f1};", "line 9: unsupported instruction mma"},
		{"undefined register", "add.s32 %r1, %r9, 1;", "line 9: undefined name %r9"},
		{"undefined label", "bra $nowhere;", "line 9: undefined label $nowhere"},
		{"video secondary operation", "vadd.s32.s32.s32.add %r1, %r2, %r1, %r2;", "line 9: vadd.s32.s32.s32.add: the secondary operation and the data merge of vadd are not supported"},
		{"video operand selector", "vmax.u32.u32.u32 %r1, %r2.b1, %r1;", "line 9: vmax.u32.u32.u32: operand selectors (%r2.b1) are not supported"},
		{"SIMD video", "vadd2.u32.u32.u32 %r1, %r2, %r1, %r2;", "line 9: unsupported instruction vadd2.u32.u32.u32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := ptxHeader + "\n.visible .entry k(.param .u64 out)\n{\n\t.reg .b32 %r<3>; .reg .f32 %f<3>; .reg .pred %p<2>;\n\n" + c.inst + "\n\tret;\n}\n"
			_, err := Parse(src)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func TestDivergentLoopReconverges(t *testing.T) {
	// each lane loops tid%5 times; after the loop the whole warp is
	// converged again, which the shuffle's full member mask requires
	src := `
.visible .entry loop(.param .u64 out)
{
	.reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<3>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	rem.u32 %r2, %r1, 5;
	mov.u32 %r3, 0;
$LOOP:
	setp.ge.u32 %p1, %r3, %r2;
	@%p1 bra $DONE;
	add.s32 %r3, %r3, 1;
	bra.uni $LOOP;
$DONE:
	activemask.b32 %r4;
	shfl.sync.idx.b32 %r5, %r3, 4, 31, -1;
	mul.wide.u32 %rd2, %r1, 12;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	st.global.u32 [%rd3+4], %r4;
	st.global.u32 [%rd3+8], %r5;
	ret;
}`
	out := make([]byte, 12*40)
	_, err := runOne(t, src, "loop", [3]uint32{1, 1, 1}, [3]uint32{40, 1, 1}, out, false)
	require.NoError(t, err)
	w := u32s(out)
	for i := uint32(0); i < 40; i++ {
		mask := uint32(0xffffffff)
		if i >= 32 {
			mask = 0xff
		}
		require.Equal(t, []uint32{i % 5, mask, (i/32*32 + 4) % 5}, w[3*i:3*i+3], "thread %d", i)
	}
}

func TestShuffleMissingLaneHangs(t *testing.T) {
	// lanes 0..15 shuffle with a full member mask while 16..31 wait at a
	// block barrier that waits for 0..15: neither can go on (lanes that
	// exit instead take no part: TestEarlyExitThenSync)
	src := `
.visible .entry partial(.param .u64 out)
{
	.reg .b32 %r<4>; .reg .pred %p<2>;
	mov.u32 %r1, %tid.x;
	setp.ge.u32 %p1, %r1, 16;
	@%p1 bra $END;
	shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
$END:
	bar.sync 0;
	ret;
}`
	_, err := runOne(t, src, "partial", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, make([]byte, 8), false)
	f := faultOf(t, err)
	require.Equal(t, BarrierHang, f.Kind)
	require.Equal(t, 11, f.Line)
	require.Contains(t, err.Error(), "shfl.sync")
}

func TestMoreForms(t *testing.T) {
	src := `
.visible .entry forms(.param .u64 out)
{
	.reg .b32 %r<20>; .reg .b64 %rd<4>; .reg .f32 %f<4>; .reg .pred %p<3>; .reg .f64 %fd<3>;
	ld.param.u64 %rd1, [out];
	bfi.b32 %r1, 0xA, 0xFFFF0000, 4, 4; st.global.u32 [%rd1], %r1;
	mov.u32 %r2, -5;
	set.lt.u32.s32 %r3, %r2, 3; st.global.u32 [%rd1+4], %r3;
	mov.f32 %f1, 0f00000001;
	testp.subnormal.f32 %p1, %f1; selp.u32 %r4, 1, 0, %p1; st.global.u32 [%rd1+8], %r4;
	prmt.b32 %r5, 0x33221100, 0x77665544, 0x7531; st.global.u32 [%rd1+12], %r5;
	popc.b32 %r6, 0xF0F0; st.global.u32 [%rd1+16], %r6;
	clz.b32 %r7, 0x00F0; st.global.u32 [%rd1+20], %r7;
	brev.b32 %r8, 1; st.global.u32 [%rd1+24], %r8;
	bfind.u32 %r9, 0x00F0; st.global.u32 [%rd1+28], %r9;
	mul.hi.s32 %r10, %r2, 0x40000000; st.global.u32 [%rd1+32], %r10;
	shf.l.wrap.b32 %r11, 0x80000000, 1, 1; st.global.u32 [%rd1+36], %r11;
	mov.f64 %fd1, 0d3FF0000000000000;
	cvt.rn.f32.f64 %f2, %fd1; add.rz.f32 %f3, %f2, 0f33800000; st.global.f32 [%rd1+40], %f3;
	add.rp.f32 %f3, %f2, 0f33800000; st.global.f32 [%rd1+44], %f3;
	mul24.lo.s32 %r12, 0x00FFFFFF, 2; st.global.u32 [%rd1+48], %r12;
	mad24.hi.u32 %r13, 0x00FFFFFF, 0x00010000, 1; st.global.u32 [%rd1+52], %r13;
	ret;
}`
	out := make([]byte, 56)
	_, err := runOne(t, src, "forms", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, out, false)
	require.NoError(t, err)
	want := []uint32{
		0xFFFF00A0, // bfi: 4 bits of 0xA at bit 4
		0xffffffff, // set: -5 < 3
		1,          // the smallest subnormal
		0x77553311, // prmt selects bytes 1, 3, 5 and 7 of {b, a}
		8, 24, 0x80000000, 7,
		0xfffffffe,                                                    // high word of -5 * 2^30
		3,                                                             // shf.l: the high word of {1, 0x80000000} << 1
		math.Float32bits(1), math.Float32bits(math.Nextafter32(1, 2)), // 1 + 2^-24: rz keeps 1, rp rounds up
		0xfffffffe, // mul24: 0xFFFFFF is -1 in 24 bits
		0x01000000, // mad24.hi: bits 16..47 of 0xFFFFFF * 2^16 (0xFFFFFF), plus 1
	}
	require.Equal(t, want, u32s(out))
}

func TestStatsCountBytes(t *testing.T) {
	m := loadKernels(t)
	k, _ := m.Kernel("scale_f32")
	h := &hostMem{}
	const n = 1000
	buf := make([]byte, 4*n)
	h.bufs = append(h.bufs, buf)
	params := binary.LittleEndian.AppendUint64(nil, addr(buf))
	params = append(params, layoutBytes([]int64{n}, []int64{4})...)
	params = binary.LittleEndian.AppendUint32(params, math.Float32bits(2))
	st, err := k.Run(Launch{Grid: grid1D(n), Block: [3]uint32{256, 1, 1}, Params: params, Global: h})
	require.NoError(t, err)
	require.Equal(t, int64(4*n), st.Read[addr(buf)], "each element read once")
	require.Equal(t, int64(4*n), st.Written[addr(buf)], "each element written once")
	require.Equal(t, int64(4), st.Blocks)
	require.Equal(t, int64(32), st.Warps)
	runtime.KeepAlive(buf)
}

func TestFuncParamThroughRegister(t *testing.T) {
	// a .func reads its by-value struct parameter through a register, as
	// nvcc writes it for structs; the kernel reads its own the same way
	src := `
.func (.param .b32 ret) second(.param .align 4 .b8 s[8])
{
	.reg .b32 %r<3>; .reg .b64 %rd<2>;
	mov.b64 %rd1, s;
	ld.param.u32 %r1, [%rd1+4];
	st.param.b32 [ret], %r1;
	ret;
}
.visible .entry k(.param .u64 out, .param .align 4 .b8 pair[8])
{
	.reg .b32 %r<4>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.b64 %rd2, pair;
	ld.param.u32 %r1, [%rd2];
	ld.param.u32 %r2, [%rd2+4];
	{
	.param .align 4 .b8 p0[8];
	st.param.b32 [p0], %r2;
	st.param.b32 [p0+4], %r1;
	.param .b32 r0;
	call.uni (r0), second, (p0);
	ld.param.b32 %r3, [r0];
	}
	st.global.u32 [%rd1], %r3;
	ret;
}`
	m, err := Parse(ptxHeader + src)
	require.NoError(t, err)
	k, _ := m.Kernel("k")
	out := make([]byte, 4)
	params := binary.LittleEndian.AppendUint64(nil, addr(out))
	params = binary.LittleEndian.AppendUint32(params, 11)
	params = binary.LittleEndian.AppendUint32(params, 22)
	_, err = k.Run(Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: params, Global: &hostMem{bufs: [][]byte{out}}})
	require.NoError(t, err)
	require.Equal(t, uint32(11), u32s(out)[0], "the struct's second word, swapped by the caller")
	runtime.KeepAlive(out)
}

func TestLaunchLimits(t *testing.T) {
	m := loadKernels(t)
	k, _ := m.Kernel("backproject_tiled_f32")
	params := make([]byte, k.ParamBytes)
	for _, c := range []struct {
		l    Launch
		kind FaultKind
	}{
		{Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 16, 1}, Params: params}, LaunchOutOfResources}, // past .maxntid 256
		{Launch{Grid: [3]uint32{0, 1, 1}, Block: [3]uint32{32, 8, 1}, Params: params}, InvalidValue},
		{Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{2048, 1, 1}, Params: params}, InvalidValue},
		{Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 8, 1}, Params: params[:8]}, InvalidValue},
		{Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 8, 1}, Params: params, DynamicShared: 1 << 20}, LaunchOutOfResources},
	} {
		_, err := k.Run(c.l)
		require.Equal(t, c.kind, faultOf(t, err).Kind, "%+v", c.l.Block)
	}
}

func TestApproxWithinISABounds(t *testing.T) {
	src := `
.visible .entry approx(.param .u64 out)
{
	.reg .b32 %r<3>; .reg .b64 %rd<4>; .reg .f32 %f<10>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 32;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];
	ex2.approx.ftz.f32 %f2, %f1;
	lg2.approx.ftz.f32 %f3, %f1;
	sin.approx.ftz.f32 %f4, %f1;
	cos.approx.ftz.f32 %f5, %f1;
	rcp.approx.ftz.f32 %f6, %f1;
	sqrt.approx.ftz.f32 %f7, %f1;
	rsqrt.approx.ftz.f32 %f8, %f1;
	st.global.v4.f32 [%rd3], {%f1, %f2, %f3, %f4};
	st.global.v4.f32 [%rd3+16], {%f5, %f6, %f7, %f8};
	ret;
}`
	rng := rand.New(rand.NewPCG(rand.Uint64(), 21))
	const n = 256
	out := make([]byte, 32*n)
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(0.01 + rng.Float64()*3.1)
		binary.LittleEndian.PutUint32(out[32*i:], math.Float32bits(xs[i]))
	}
	_, err := runOne(t, src, "approx", [3]uint32{1, 1, 1}, [3]uint32{n, 1, 1}, out, false)
	require.NoError(t, err)
	ulp := func(v float64) float64 {
		return float64(nextUp32(float32(math.Abs(v)))) - math.Abs(float64(float32(v)))
	}
	for i, x32 := range xs {
		x := float64(x32)
		g := func(k int) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(out[32*i+4*k:]))) }
		require.InDelta(t, math.Exp2(x), g(1), 2*ulp(math.Exp2(x)), "ex2 %v: 2 ulp", x)
		require.InDelta(t, math.Log2(x), g(2), math.Max(math.Exp2(-22.6), ulp(math.Log2(x))), "lg2 %v: 2^-22.6 (the ISA states it for the mantissa part), or the result's ulp", x)
		require.InDelta(t, math.Sin(x), g(3), math.Exp2(-20.5), "sin %v: 2^-20.5", x)
		require.InDelta(t, math.Cos(x), g(4), math.Exp2(-20.5), "cos %v: 2^-20.5", x)
		require.InDelta(t, 1/x, g(5), ulp(1/x), "rcp %v: 1 ulp", x)
		require.InDelta(t, math.Sqrt(x), g(6), ulp(math.Sqrt(x)), "sqrt %v: 1 ulp", x)
		require.InDelta(t, 1/math.Sqrt(x), g(7), math.Exp2(-22.9)/math.Sqrt(x), "rsqrt %v: 2^-22.9 relative", x)
	}
}

func TestConcurrentRuns(t *testing.T) {
	// a kernel's program is read-only: launches may run at once
	m := loadKernels(t)
	k, _ := m.Kernel("checksum")
	rng := rand.New(rand.NewPCG(rand.Uint64(), 31))
	const runs = 4
	errs := make(chan error, runs)
	outs := make([][]byte, runs)
	datas := make([][]byte, runs)
	for i := range runs {
		h := &hostMem{}
		datas[i] = h.alloc(3000+i, rng)
		outs[i] = h.alloc(8, rng)
		clear(outs[i])
		p := binary.LittleEndian.AppendUint64(nil, addr(datas[i]))
		p = binary.LittleEndian.AppendUint64(p, uint64(len(datas[i])))
		p = binary.LittleEndian.AppendUint64(p, addr(outs[i]))
		go func() {
			_, err := k.Run(Launch{Grid: [3]uint32{3, 1, 1}, Block: [3]uint32{256, 1, 1}, Params: p, Global: h})
			errs <- err
		}()
	}
	for range runs {
		require.NoError(t, <-errs)
	}
	for i := range runs {
		want := uint64(0)
		for w := 0; w*4 < len(datas[i]); w++ {
			var word uint32
			for b := 0; b < 4 && 4*w+b < len(datas[i]); b++ {
				word |= uint32(datas[i][4*w+b]) << (8 * b)
			}
			want += uint64(word) * uint64(2*w+1)
		}
		require.Equal(t, want, binary.LittleEndian.Uint64(outs[i]), "run %d", i)
	}
	runtime.KeepAlive(datas)
	runtime.KeepAlive(outs)
}

func TestGenericAndDynamicShared(t *testing.T) {
	// extern shared (dynamic) through generic pointers: each thread writes
	// its slot through cvta.shared, reads its neighbour's after a barrier
	src := `
.extern .shared .align 4 .b8 dyn[];
.visible .entry gen(.param .u64 out)
{
	.reg .b32 %r<6>; .reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u64 %rd2, dyn;
	cvta.shared.u64 %rd3, %rd2;
	mul.wide.u32 %rd4, %r1, 4;
	add.s64 %rd5, %rd3, %rd4;
	mul.lo.u32 %r2, %r1, 3;
	st.u32 [%rd5], %r2;
	bar.sync 0;
	add.s32 %r3, %r1, 1;
	rem.u32 %r3, %r3, 64;
	mul.wide.u32 %rd6, %r3, 4;
	add.s64 %rd7, %rd3, %rd6;
	ld.u32 %r4, [%rd7];
	mov.u32 %r5, %dynamic_smem_size;
	add.s32 %r4, %r4, %r5;
	add.s64 %rd1, %rd1, %rd4;
	st.global.u32 [%rd1], %r4;
	ret;
}`
	m, err := Parse(ptxHeader + src)
	require.NoError(t, err)
	k, _ := m.Kernel("gen")
	out := make([]byte, 4*64)
	params := binary.LittleEndian.AppendUint64(nil, addr(out))
	l := Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{64, 1, 1}, DynamicShared: 256, Params: params, Global: &hostMem{bufs: [][]byte{out}}}
	_, err = k.Run(l)
	require.NoError(t, err)
	for i, v := range u32s(out) {
		require.Equal(t, uint32((i+1)%64*3+256), v, "thread %d", i)
	}
	runtime.KeepAlive(out)
	// too little dynamic shared memory: the last threads write past it
	l.DynamicShared = 128
	_, err = k.Run(l)
	f := faultOf(t, err)
	require.Equal(t, IllegalAddress, f.Kind)
	require.Equal(t, "shared", f.Space)
	require.Equal(t, uint32(32), f.Thread.Thread[0])
	require.Equal(t, int64(4), f.Past)
}

func TestBarRed(t *testing.T) {
	// __syncthreads_count, _and and _or: threads with an odd id count
	src := `
.visible .entry red(.param .u64 out)
{
	.reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<5>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 1;
	setp.eq.u32 %p1, %r2, 1;
	bar.red.popc.u32 %r3, 0, %p1;
	bar.red.and.pred %p2, 0, %p1;
	bar.red.or.pred %p3, 0, %p1;
	setp.lt.u32 %p4, %r1, 1000;
	bar.red.and.pred %p4, 0, %p4;
	selp.u32 %r4, 1, 0, %p2;
	selp.u32 %r5, 1, 0, %p3;
	selp.u32 %r6, 1, 0, %p4;
	mul.wide.u32 %rd2, %r1, 16;
	add.s64 %rd3, %rd1, %rd2;
	st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};
	ret;
}`
	const n = 96
	out := make([]byte, 16*n)
	_, err := runOne(t, src, "red", [3]uint32{1, 1, 1}, [3]uint32{n, 1, 1}, out, false)
	require.NoError(t, err)
	w := u32s(out)
	for i := 0; i < n; i++ {
		require.Equal(t, []uint32{n / 2, 0, 1, 1}, w[4*i:4*i+4], "thread %d", i)
	}
}

// A vector or list operand left open at the end of the text is an error at
// the line where it opened.
func TestUnterminatedOperand(t *testing.T) {
	for _, c := range []struct{ name, inst, want string }{
		{"vector", "ld.global.v2.f32 {%f1, %f2", "line 9: unterminated vector"},
		{"list", "call.uni (%r1", "line 9: unterminated list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := ptxHeader + "\n.visible .entry k(.param .u64 out)\n{\n\t.reg .b32 %r<3>; .reg .f32 %f<3>;\n\n" + c.inst
			_, err := Parse(src)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}
