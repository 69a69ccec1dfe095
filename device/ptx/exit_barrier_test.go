package ptx

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Kernels that return early, as CUDA C's `if (i >= n) return;` compiles,
// and whose other threads then meet a block barrier or a full-mask warp
// instruction. The ISA's exit: "Barriers exclusively waiting on arrivals
// from exited threads are always released". The CUDA C++ Programming
// Guide's warp functions: "all non-exited threads named in mask must
// execute the same intrinsic". Each runs on a GPU; each ran into a
// BarrierHang fault here before.
func TestEarlyExitThenSync(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    string
		block  uint32
		want   []uint32
		nWords int
	}{
		{
			// __syncthreads() after 56 of 256 threads returned; thread 0 sums
			// what the 200 others put in shared memory: 1 + 2 + ... + 200
			name: "early return, then __syncthreads()", block: 256, nWords: 1, want: []uint32{20100},
			src: `
.visible .entry k(.param .u64 out)
{
	.reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
	.shared .align 4 .b8 sdata[1024];
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, 200;
	mov.u32 %r2, %tid.x;
	setp.ge.u32 %p1, %r2, %r1;
	@%p1 bra DONE;
	mov.u32 %r3, sdata;
	shl.b32 %r4, %r2, 2;
	add.s32 %r5, %r3, %r4;
	add.s32 %r9, %r2, 1;
	st.shared.u32 [%r5], %r9;
	bar.sync 0;
	setp.ne.s32 %p2, %r2, 0;
	@%p2 bra DONE;
	mov.u32 %r10, 0;
	mov.u32 %r6, 0;
LOOP:
	shl.b32 %r7, %r6, 2;
	add.s32 %r8, %r3, %r7;
	ld.shared.u32 %r11, [%r8];
	add.s32 %r10, %r10, %r11;
	add.s32 %r6, %r6, 1;
	setp.lt.u32 %p3, %r6, %r1;
	@%p3 bra LOOP;
	cvta.to.global.u64 %rd2, %rd1;
	st.global.u32 [%rd2], %r10;
DONE:
	ret;
}`,
		},
		{
			// whole warps return (64 of 96 threads stay), then a full-mask
			// shuffle reduction in each warp that stays: lane 0 of warp w
			// writes the sum of its lanes' tid+1
			name: "early return of whole warps, then a full-mask shuffle reduction", block: 96, nWords: 3,
			want: []uint32{528, 1552, 0xdeadbeef},
			src: `
.visible .entry k(.param .u64 out)
{
	.reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, %tid.x;
	shr.u32 %r9, %r2, 5;
	mul.wide.u32 %rd2, %r9, 4;
	add.s64 %rd3, %rd1, %rd2;
	setp.ge.u32 %p1, %r2, 64;
	@%p1 bra DONE;
	add.s32 %r3, %r2, 1;
	shfl.sync.down.b32 %r4, %r3, 16, 0x1f, 0xffffffff; add.s32 %r3, %r3, %r4;
	shfl.sync.down.b32 %r4, %r3, 8, 0x1f, 0xffffffff;  add.s32 %r3, %r3, %r4;
	shfl.sync.down.b32 %r4, %r3, 4, 0x1f, 0xffffffff;  add.s32 %r3, %r3, %r4;
	shfl.sync.down.b32 %r4, %r3, 2, 0x1f, 0xffffffff;  add.s32 %r3, %r3, %r4;
	shfl.sync.down.b32 %r4, %r3, 1, 0x1f, 0xffffffff;  add.s32 %r3, %r3, %r4;
	and.b32 %r5, %r2, 31;
	setp.ne.s32 %p2, %r5, 0;
	@%p2 bra DONE;
	st.global.u32 [%rd3], %r3;
DONE:
	ret;
}`,
		},
		{
			// 12 of 32 lanes return, then __ballot_sync(0xffffffff, lane is
			// even) and a full-mask broadcast of lane 3's value: the ballot
			// counts the 20 lanes left; lane 0 writes both
			name: "early return in a warp, then a full-mask ballot and broadcast", block: 32, nWords: 2,
			want: []uint32{0x00055555, 103},
			src: `
.visible .entry k(.param .u64 out)
{
	.reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, %tid.x;
	setp.ge.u32 %p1, %r2, 20;
	@%p1 bra DONE;
	and.b32 %r3, %r2, 1;
	setp.eq.s32 %p2, %r3, 0;
	vote.sync.ballot.b32 %r4, %p2, 0xffffffff;
	add.s32 %r5, %r2, 100;
	shfl.sync.idx.b32 %r6, %r5, 3, 0x1f, 0xffffffff;
	setp.ne.s32 %p3, %r2, 0;
	@%p3 bra DONE;
	st.global.u32 [%rd1], %r4;
	st.global.u32 [%rd1+4], %r6;
DONE:
	ret;
}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]byte, 4*tc.nWords)
			for i := range tc.nWords {
				binary.LittleEndian.PutUint32(out[4*i:], 0xdeadbeef)
			}
			_, err := runOne(t, tc.src, "k", [3]uint32{1, 1, 1}, [3]uint32{tc.block, 1, 1}, out, false)
			require.NoError(t, err)
			assert.Equal(t, tc.want, u32s(out))
		})
	}
}

// A shuffle's lane operand counts only its low five bits (the ISA's
// shfl.sync: "bval[4:0] = b[4:0]"): source lane 33 is lane 1, an offset of
// 34 is 2.
func TestShuffleLaneOperandLowBits(t *testing.T) {
	src := `
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<12>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, %tid.x;
	mul.wide.u32 %rd2, %r2, 8;
	add.s64 %rd3, %rd1, %rd2;
	add.s32 %r3, %r2, 1000;
	shfl.sync.idx.b32 %r4, %r3, 33, 0x1f, 0xffffffff;
	shfl.sync.down.b32 %r5, %r3, 34, 0x1f, 0xffffffff;
	st.global.u32 [%rd3], %r4;
	st.global.u32 [%rd3+4], %r5;
	ret;
}`
	out := make([]byte, 8*32)
	_, err := runOne(t, src, "k", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, out, false)
	require.NoError(t, err)
	got := u32s(out)
	for l := range 32 {
		down := uint32(l + 2 + 1000)
		if l+2 > 31 {
			down = uint32(l + 1000) // past the segment: the lane's own value
		}
		assert.Equal(t, uint32(1001), got[2*l], "lane %d: idx 33 reads lane 1", l)
		assert.Equal(t, down, got[2*l+1], "lane %d: down 34 reads lane+2", l)
	}
}
