package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// match.sync, redux.sync and activemask against the ISA. Every kernel
// runs one warp of 32 threads; %r0 is the lane.

// TestMatchSync checks match.any.sync and match.all.sync: ".all: d is set
// to mask corresponding to non-exited threads in membermask if all
// non-exited threads in membermask have same value of operand a;
// otherwise d is set to 0. Optionally predicate p is set to true if all
// non-exited threads in membermask have same value of operand a;
// otherwise p is set to false." and ".any: d is set to mask of non-exited
// threads in membermask that have same value of operand a."
func TestMatchSync(t *testing.T) {
	type mcase struct {
		name string
		// body sets %r9 (and %r10 = p for .all)
		body string
		want func(l uint32) uint32
	}
	cases := []mcase{
		{"any.b32 groups of four", `
	shr.u32 %r1, %r0, 2;
	match.any.sync.b32 %r9, %r1, 0xffffffff;`,
			func(l uint32) uint32 { return 0xf << (l &^ 3) }},
		{"any.b32 low 32 bits only", `
	cvt.u64.u32 %rd5, %r0; shl.b64 %rd5, %rd5, 32; or.b64 %rd5, %rd5, 7;
	cvt.u32.u64 %r1, %rd5;
	match.any.sync.b32 %r9, %r1, 0xffffffff;`,
			func(l uint32) uint32 { return 0xffffffff }},
		{"any.b64 upper bits differ", `
	and.b32 %r1, %r0, 1;
	cvt.u64.u32 %rd5, %r1; shl.b64 %rd5, %rd5, 32; or.b64 %rd5, %rd5, 7;
	match.any.sync.b64 %r9, %rd5, 0xffffffff;`,
			func(l uint32) uint32 {
				if l&1 == 1 {
					return 0xaaaaaaaa
				}
				return 0x55555555
			}},
		{"any.b32 member mask of the lane's half", `
	setp.lt.u32 %p1, %r0, 16;
	selp.b32 %r2, 0x0000ffff, 0xffff0000, %p1;
	and.b32 %r1, %r0, 1;
	match.any.sync.b32 %r9, %r1, %r2;`,
			func(l uint32) uint32 {
				half := uint32(0x0000ffff)
				if l >= 16 {
					half = 0xffff0000
				}
				if l&1 == 1 {
					return half & 0xaaaaaaaa
				}
				return half & 0x55555555
			}},
		{"all.b32 same values: d = membermask, p = true", `
	mov.b32 %r1, 42;
	match.all.sync.b32 %r9|%p1, %r1, 0xffffffff;
	selp.u32 %r10, 1, 0, %p1; shl.b32 %r10, %r10, 31; xor.b32 %r9, %r9, %r10;`,
			func(l uint32) uint32 { return 0xffffffff ^ 1<<31 }},
		{"all.b32 different values: d = 0, p = false", `
	shr.u32 %r1, %r0, 4;
	match.all.sync.b32 %r9|%p1, %r1, 0xffffffff;
	selp.u32 %r10, 1, 0, %p1; or.b32 %r9, %r9, %r10;`,
			func(l uint32) uint32 { return 0 }},
		{"all.b32 over each half (same within it)", `
	shr.u32 %r1, %r0, 4;
	setp.lt.u32 %p2, %r0, 16;
	selp.b32 %r2, 0x0000ffff, 0xffff0000, %p2;
	match.all.sync.b32 %r9|%p1, %r1, %r2;
	@!%p1 mov.b32 %r9, 1;`,
			func(l uint32) uint32 {
				if l < 16 {
					return 0x0000ffff
				}
				return 0xffff0000
			}},
		{"all.b64 sink destination, predicate only", `
	mov.b64 %rd5, 0x100000007;
	match.all.sync.b64 _|%p1, %rd5, 0xffffffff;
	selp.u32 %r9, 7, 8, %p1;`,
			func(l uint32) uint32 { return 7 }},
		{"all.b64 differing upper halves", `
	cvt.u64.u32 %rd5, %r0; shl.b64 %rd5, %rd5, 32;
	match.all.sync.b64 %r9|%p1, %rd5, 0xffffffff;
	selp.u32 %r10, 7, 8, %p1; add.u32 %r9, %r9, %r10;`,
			func(l uint32) uint32 { return 8 }},
		// exited lanes take no part: lanes 20..31 exit first
		{"any.b32 with exited lanes", `
	setp.ge.u32 %p3, %r0, 20;
	@%p3 bra $EXIT;
	mov.b32 %r1, 5;
	match.any.sync.b32 %r9, %r1, 0xffffffff;
	st.global.u32 [%rd3], %r9;
$EXIT:
	exit;`,
			func(l uint32) uint32 {
				if l >= 20 {
					return 0
				}
				return 0x000fffff
			}},
		{"all.b32 with exited lanes", `
	setp.ge.u32 %p3, %r0, 20;
	@%p3 bra $EXIT;
	mov.b32 %r1, 5;
	match.all.sync.b32 %r9|%p1, %r1, 0xffffffff;
	st.global.u32 [%rd3], %r9;
$EXIT:
	exit;`,
			func(l uint32) uint32 {
				if l >= 20 {
					return 0
				}
				return 0x000fffff
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runLanes(t, ptxHeader, "", tc.body, 32)
			for l := uint32(0); l < 32; l++ {
				require.Equal(t, tc.want(l), got[l], "lane %d: %#08x", l, tc.want(l))
			}
		})
	}
}

// TestReduxSync checks redux.sync: "redux.sync performs a reduction
// operation .op of the 32 bit source register src across all non-exited
// threads in the membermask. The result of the reduction operation is
// written to the 32 bit destination register dst." and "For the .add
// operation result is truncated to 32 bits."
func TestReduxSync(t *testing.T) {
	// values: lane l holds src(l); the reductions over lanes in [lo, hi)
	type rcase struct {
		op     string
		src    string // PTX setting %r1 from %r0
		value  func(l uint32) uint32
		reduce func(vs []uint32) uint32
	}
	minS := func(vs []uint32) uint32 {
		m := int32(vs[0])
		for _, v := range vs {
			m = min(m, int32(v))
		}
		return uint32(m)
	}
	maxS := func(vs []uint32) uint32 {
		m := int32(vs[0])
		for _, v := range vs {
			m = max(m, int32(v))
		}
		return uint32(m)
	}
	fold := func(f func(a, b uint32) uint32) func(vs []uint32) uint32 {
		return func(vs []uint32) uint32 {
			acc := vs[0]
			for _, v := range vs[1:] {
				acc = f(acc, v)
			}
			return acc
		}
	}
	centered := func(l uint32) uint32 { return l - 16 } // -16 .. 15
	cases := []rcase{
		{"add.u32", "add.u32 %r1, %r0, 1;", func(l uint32) uint32 { return l + 1 }, fold(func(a, b uint32) uint32 { return a + b })},
		{"add.s32", "sub.s32 %r1, %r0, 16;", centered, fold(func(a, b uint32) uint32 { return a + b })},
		{"add.u32 truncated", "mov.b32 %r1, 0x80000001;", func(l uint32) uint32 { return 0x80000001 }, fold(func(a, b uint32) uint32 { return a + b })},
		{"min.s32", "sub.s32 %r1, %r0, 16;", centered, minS},
		{"max.s32", "sub.s32 %r1, %r0, 16;", centered, maxS},
		{"min.u32", "sub.s32 %r1, %r0, 16;", centered, fold(func(a, b uint32) uint32 { return min(a, b) })},
		{"max.u32", "sub.s32 %r1, %r0, 16;", centered, fold(func(a, b uint32) uint32 { return max(a, b) })},
		{"and.b32", "not.b32 %r1, %r0;", func(l uint32) uint32 { return ^l }, fold(func(a, b uint32) uint32 { return a & b })},
		{"or.b32", "shl.b32 %r1, 1, %r0;", func(l uint32) uint32 { return 1 << l }, fold(func(a, b uint32) uint32 { return a | b })},
		{"xor.b32", "mul.lo.u32 %r1, %r0, 0x9e3779b9;", func(l uint32) uint32 { return l * 0x9e3779b9 }, fold(func(a, b uint32) uint32 { return a ^ b })},
	}
	type group struct {
		name   string
		pre    string // PTX before the redux; may set %r2 = membermask
		post   string
		member func(l uint32) (lo, hi uint32, runs bool)
	}
	groups := []group{
		{"whole warp", "mov.b32 %r2, 0xffffffff;", "", func(l uint32) (uint32, uint32, bool) { return 0, 32, true }},
		{"halves", "setp.lt.u32 %p2, %r0, 16; selp.b32 %r2, 0x0000ffff, 0xffff0000, %p2;", "", func(l uint32) (uint32, uint32, bool) {
			if l < 16 {
				return 0, 16, true
			}
			return 16, 32, true
		}},
		{"lanes 11..31 exited", "mov.b32 %r2, 0xffffffff; setp.ge.u32 %p3, %r0, 11; @%p3 bra $EXIT;",
			"st.global.u32 [%rd3], %r9;\n$EXIT:\n\texit;", func(l uint32) (uint32, uint32, bool) { return 0, 11, l < 11 }},
	}
	for _, g := range groups {
		for _, tc := range cases {
			t.Run(g.name+" "+tc.op, func(t *testing.T) {
				body := fmt.Sprintf("\t%s\n\t%s\n\tredux.sync.%s %%r9, %%r1, %%r2;\n\t%s", tc.src, g.pre, strings.Fields(tc.op)[0], g.post)
				got := runLanes(t, ptxHeader80, "", body, 32)
				for l := uint32(0); l < 32; l++ {
					lo, hi, runs := g.member(l)
					want := uint32(0)
					if runs {
						var vs []uint32
						for j := lo; j < hi; j++ {
							vs = append(vs, tc.value(j))
						}
						want = tc.reduce(vs)
					}
					require.Equal(t, want, got[l], "lane %d", l)
				}
			})
		}
	}
}

// TestActivemaskGuard checks a predicated activemask: "activemask queries
// predicated-on active threads from the executing warp ... An active
// thread will contribute 1 for its entry in the result and exited or
// inactive or predicated-off thread will contribute 0 for its entry in the
// result." Lanes predicated off do not write d (a guard's false lanes do
// not execute the instruction).
func TestActivemaskGuard(t *testing.T) {
	cases := []struct {
		name string
		body string
		want func(l uint32) uint32
	}{
		{"odd lanes", `
	and.b32 %r1, %r0, 1; setp.eq.u32 %p1, %r1, 1;
	mov.b32 %r9, 0xdead;
	@%p1 activemask.b32 %r9;`,
			func(l uint32) uint32 {
				if l&1 == 1 {
					return 0xaaaaaaaa
				}
				return 0xdead
			}},
		{"negated guard, lanes below 8", `
	setp.ge.u32 %p1, %r0, 8;
	mov.b32 %r9, 0xdead;
	@!%p1 activemask.b32 %r9;`,
			func(l uint32) uint32 {
				if l < 8 {
					return 0xff
				}
				return 0xdead
			}},
		{"guard inside a divergent branch, exited lanes", `
	mov.b32 %r9, 0xdead;
	setp.ge.u32 %p3, %r0, 24;
	@%p3 bra $EXIT;
	setp.lt.u32 %p2, %r0, 12;
	@%p2 bra $LOW;
	and.b32 %r1, %r0, 1; setp.eq.u32 %p1, %r1, 0;
	@%p1 activemask.b32 %r9;
$LOW:
	st.global.u32 [%rd3], %r9;
$EXIT:
	exit;`,
			func(l uint32) uint32 {
				if l >= 12 && l < 24 && l&1 == 0 {
					return 0x00555000 // even lanes 12..22
				}
				if l >= 24 {
					return 0
				}
				return 0xdead
			}},
		{"unguarded in a divergent branch", `
	setp.lt.u32 %p2, %r0, 5;
	@%p2 bra $LOW;
	activemask.b32 %r9;
	bra.uni $END;
$LOW:
	activemask.b32 %r9;
$END:`,
			func(l uint32) uint32 {
				if l < 5 {
					return 0x1f
				}
				return 0xffffffe0
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runLanes(t, ptxHeader, "", tc.body, 32)
			for l := uint32(0); l < 32; l++ {
				require.Equal(t, tc.want(l), got[l], "lane %d", l)
			}
		})
	}
}
