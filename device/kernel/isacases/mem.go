package isacases

import (
	"math"
)

const (
	isaBar       = "bar.sync: Barrier synchronization: waits until all threads of the CTA (or, with a thread count b, b threads) have arrived; memory accesses requested by threads prior to the barrier are performed relative to all threads participating in the barrier. exit: Barriers exclusively waiting on arrivals from exited threads are always released."
	isaBarCount  = "bar.sync a, b: operand b specifies the number of threads participating in the barrier (a multiple of the warp size); bar.arrive a, b: the arriving threads do not wait, and count towards b."
	isaBarRed    = "bar.red performs a reduction across the threads of the barrier: .popc.u32 is the number of threads with a True predicate; .and.pred is True if the predicate is True in all threads; .or.pred if it is True in any thread. The result is given to all threads participating."
	isaAtom      = "atom: Atomically loads the original value at location a into destination register d, performs a reduction operation with operand b and the value in location a, and stores the result of the specified operation at location a: .and, .or, .xor, .cas (a == b ? c : a), .exch, .add, .inc ((old >= b) ? 0 : old+1), .dec (((old == 0) || (old > b)) ? b : old-1), .min, .max."
	isaRed       = "red: Performs a reduction operation with operand b and the value in location a, and stores the result at location a (no value is returned)."
	isaAtomF32   = "Current implementation of atom.add.f32 on global memory flushes subnormal inputs and results to sign-preserving zero; whereas atom.add.f32 on shared memory supports subnormal inputs and results and doesn't flush them to zero."
	isaAtomF64   = "atom.add.f64 rounds to nearest even (IEEE 754, subnormals supported)."
	isaLdVec     = "ld, st: vector loads and stores (.v2, .v4) move consecutive elements to or from the registers of the vector operand, element 0 at the lowest address."
	isaLdExt     = "ld: destination registers wider than the type: the loaded value is sign-extended for signed types and zero-extended otherwise. st: a register wider than the type stores its low bits."
	isaCvta      = "cvta: Convert an address between the generic and a state space; isspacep: p is True if the generic address a falls within the window of the state space."
	isaStateVars = "Module-scope .global and .const variables are initialized with their initializers before the kernel runs; .local memory is private to the thread; .shared memory is shared by the threads of the CTA."
)

// block is a many-thread case writing one .b32 per thread.
func block(class, name, isa string, threads int, decls, body string, want func(t int) (uint64, bool)) Case {
	c := Case{Name: class + "/" + name, Class: class, ISA: isa, Body: body, Decls: decls, Threads: threads, Size: 4}
	for t := 0; t < threads; t++ {
		w, ok := want(t)
		if !ok {
			w = Sentinel
		}
		c.Want = append(c.Want, w)
	}
	return c
}

const shared128 = ".shared .align 8 .b8 sh[1024];"

func barrierCases() []Case {
	// each thread stores t*3+1 in sh[t], then reads sh[partner]
	exchange := func(partner string) string {
		return "mov.u32 %r9, sh;\nshl.b32 %r8, %t, 2;\nadd.u32 %r8, %r9, %r8;\nmad.lo.u32 %r1, %t, 3, 1;\nst.shared.u32 [%r8], %r1;\n" +
			"BAR\n" + partner + "shl.b32 %r6, %r7, 2;\nadd.u32 %r6, %r9, %r6;\nld.shared.u32 %r2, [%r6];\nst.global.b32 [%oa], %r2;"
	}
	rev := func(n int) string { return "sub.u32 %r7, " + itoa(n-1) + ", %t;\n" }
	sub := func(s, bar string) string { return replace(s, "BAR", bar) }
	return []Case{
		block("barrier", "bar.sync 0 whole block", isaBar, 128, shared128, sub(exchange(rev(128)), "bar.sync 0;"),
			func(t int) (uint64, bool) { return uint64((127-t)*3 + 1), true }),
		block("barrier", "barrier.sync 0 whole block", isaBar, 96, shared128, sub(exchange(rev(96)), "barrier.sync 0;"),
			func(t int) (uint64, bool) { return uint64((95-t)*3 + 1), true }),
		block("barrier", "bar.sync 0 after early exit", isaBar, 128, shared128,
			"setp.ge.u32 %p1, %t, 72;\n@%p1 exit;\n"+sub(exchange(rev(72)), "bar.sync 0;"),
			func(t int) (uint64, bool) { return uint64((71-t)*3 + 1), t < 72 }),
		block("barrier", "bar.sync 0 after a whole warp exits", isaBar, 96, shared128,
			"setp.ge.u32 %p1, %t, 32;\nsetp.lt.u32 %p2, %t, 64;\nand.pred %p1, %p1, %p2;\n@%p1 exit;\n"+
				"setp.ge.u32 %p3, %t, 64;\nsub.u32 %r7, 95, %t;\nadd.u32 %r5, %t, 64;\n"+sub(exchange("selp.u32 %r7, %r7, %r5, %p3;\n"), "bar.sync 0;")+"\n",
			func(t int) (uint64, bool) {
				switch {
				case t < 32:
					return uint64((t+64)*3 + 1), true
				case t >= 64:
					return uint64((95-t)*3 + 1), true
				}
				return 0, false
			}),
		block("barrier", "bar.sync 1, 64 by two warps of three", isaBarCount, 96, shared128,
			"setp.ge.u32 %p1, %t, 64;\n@%p1 bra DONE;\n"+sub(exchange(rev(64)), "bar.sync 1, 64;")+"\nDONE:",
			func(t int) (uint64, bool) { return uint64((63-t)*3 + 1), t < 64 }),
		block("barrier", "bar.arrive then bar.sync", isaBarCount, 64, shared128,
			"mov.u32 %r9, sh;\nsetp.lt.u32 %p1, %t, 32;\n@%p1 bra CONSUMER;\n"+
				"shl.b32 %r8, %t, 2;\nadd.u32 %r8, %r9, %r8;\nmul.lo.u32 %r1, %t, 7;\nst.shared.u32 [%r8], %r1;\nbar.arrive 1, 64;\nbra.uni DONE;\n"+
				"CONSUMER:\nbar.sync 1, 64;\nadd.u32 %r7, %t, 32;\nshl.b32 %r6, %r7, 2;\nadd.u32 %r6, %r9, %r6;\nld.shared.u32 %r2, [%r6];\nst.global.b32 [%oa], %r2;\nDONE:",
			func(t int) (uint64, bool) { return uint64((t + 32) * 7), t < 32 }),
		block("barrier", "bar.red.popc.u32", isaBarRed, 64, "",
			"rem.u32 %r5, %t, 3;\nsetp.eq.u32 %p1, %r5, 0;\nbar.red.popc.u32 %r2, 0, %p1;\nst.global.b32 [%oa], %r2;",
			func(t int) (uint64, bool) { return 22, true }),
		block("barrier", "bar.red.popc.u32 negated", isaBarRed, 64, "",
			"rem.u32 %r5, %t, 3;\nsetp.eq.u32 %p1, %r5, 0;\nbar.red.popc.u32 %r2, 0, !%p1;\nst.global.b32 [%oa], %r2;",
			func(t int) (uint64, bool) { return 42, true }),
		block("barrier", "bar.red.popc.u32 after early exit", isaBarRed+" "+isaBar, 64, "",
			"setp.ge.u32 %p2, %t, 48;\n@%p2 exit;\nsetp.lt.u32 %p1, %t, 100;\nbar.red.popc.u32 %r2, 0, %p1;\nst.global.b32 [%oa], %r2;",
			func(t int) (uint64, bool) { return 48, t < 48 }),
		block("barrier", "bar.red.and.pred true", isaBarRed, 64, "",
			"setp.lt.u32 %p1, %t, 64;\nbar.red.and.pred %p3, 0, %p1;\nselp.u32 %r2, 1, 0, %p3;\nst.global.b32 [%oa], %r2;",
			func(t int) (uint64, bool) { return 1, true }),
		block("barrier", "bar.red.and.pred one false", isaBarRed, 64, "",
			"setp.ne.u32 %p1, %t, 37;\nbar.red.and.pred %p3, 0, %p1;\nselp.u32 %r2, 1, 0, %p3;\nst.global.b32 [%oa], %r2;",
			func(t int) (uint64, bool) { return 0, true }),
		block("barrier", "bar.red.or.pred one true", isaBarRed, 64, "",
			"setp.eq.u32 %p1, %t, 37;\nbar.red.or.pred %p3, 0, %p1;\nselp.u32 %r2, 1, 0, %p3;\nst.global.b32 [%oa], %r2;",
			func(t int) (uint64, bool) { return 1, true }),
		block("barrier", "bar.red.or.pred none", isaBarRed, 64, "",
			"setp.gt.u32 %p1, %t, 64;\nbar.red.or.pred %p3, 0, %p1;\nselp.u32 %r2, 1, 0, %p3;\nst.global.b32 [%oa], %r2;",
			func(t int) (uint64, bool) { return 0, true }),
		block("barrier", "bar.red.and.pred with count", isaBarRed+" "+isaBarCount, 96, "",
			"setp.ge.u32 %p2, %t, 64;\n@%p2 bra DONE;\nsetp.ne.u32 %p1, %t, 80;\nbar.red.and.pred %p3, 2, 64, %p1;\nselp.u32 %r2, 1, 0, %p3;\nst.global.b32 [%oa], %r2;\nDONE:",
			func(t int) (uint64, bool) { return 1, t < 64 }),
		block("barrier", "bar.sync 0 twice, data through shared", isaBar, 64, shared128,
			sub(exchange(rev(64)), "bar.sync 0;")+"\nbar.sync 0;\nst.shared.u32 [%r8], %r2;\nbar.sync 0;\nld.shared.u32 %r3, [%r6];\nst.global.b32 [%oa], %r3;",
			func(t int) (uint64, bool) { return uint64(t*3 + 1), true }),
	}
}

func atomCase(name, isa, decl, body string, init []uint64, want ...uint64) Case {
	c := Case{Name: "atomic/" + name, Class: "atomic", ISA: isa, Decls: decl, Body: body, Init: init, Want: want}
	return c
}

func atomicCases() []Case {
	var cs []Case
	// single-thread atomics on global memory: out[0] the location, out[1] the old value
	type a1 struct {
		op, ty   string
		init, b  uint64
		c        uint64
		newv     uint64
		isa      string
		wideOnly bool
	}
	u32max := uint64(0xffffffff)
	for _, x := range []a1{
		{"add", "u32", 0xfffffffe, 3, 0, 1, isaAtom, false},
		{"add", "u64", 1 << 63, 1 << 63, 0, 0, isaAtom, false},
		{"inc", "u32", 5, 5, 0, 0, isaAtom, false},
		{"inc", "u32", 4, 5, 0, 5, isaAtom, false},
		{"inc", "u32", 9, 5, 0, 0, isaAtom, false},
		{"dec", "u32", 0, 5, 0, 5, isaAtom, false},
		{"dec", "u32", 9, 5, 0, 5, isaAtom, false},
		{"dec", "u32", 3, 5, 0, 2, isaAtom, false},
		{"min", "s32", 5, u32max - 2, 0, u32max - 2, isaAtom, false},
		{"min", "u32", 5, u32max - 2, 0, 5, isaAtom, false},
		{"max", "s32", 5, u32max - 2, 0, 5, isaAtom, false},
		{"max", "u64", 5, 1 << 63, 0, 1 << 63, isaAtom, false},
		{"min", "s64", 5, 1 << 63, 0, 1 << 63, isaAtom, false},
		{"and", "b32", 0xf0f0, 0xff00, 0, 0xf000, isaAtom, false},
		{"or", "b64", 0xf0f0 << 32, 0xff00, 0, 0xf0f0<<32 | 0xff00, isaAtom, false},
		{"xor", "b32", 0xf0f0, 0xff00, 0, 0x0ff0, isaAtom, false},
		{"exch", "b32", 7, 9, 0, 9, isaAtom, false},
		{"exch", "b64", 7, 1 << 40, 0, 1 << 40, isaAtom, false},
		{"cas", "b32", 7, 7, 11, 11, isaAtom, false},
		{"cas", "b32", 7, 8, 11, 7, isaAtom, false},
		{"cas", "b64", 1 << 40, 1 << 40, 3, 3, isaAtom, false},
		{"add", "f32", b32(1.5), b32(2.25), 0, b32(3.75), isaAtom, false},
		{"add", "f32", 1, 1, 0, 0, isaAtomF32, false},
		{"add", "f32", b32(0x1p-126), 0x80000001, 0, b32(0x1p-126), isaAtomF32, false},
		{"add", "f32", b32(0x1.8p-126), b32(-0x1p-126), 0, 0, isaAtomF32, false},
		{"add", "f64", b64(0.1), b64(0.2), 0, 0x3fd3333333333334, isaAtomF64, false},
		{"add", "f64", 1, 1, 0, 2, isaAtomF64, false},
	} {
		w := width(x.ty)
		reg := "%r1"
		if w == 64 {
			reg = "%rd1"
		}
		rt := regType(x.ty)
		body := "ld.global." + rt + " " + reg + ", [%in];\n"
		operands := reg
		if x.op == "cas" {
			creg := "%r2"
			if w == 64 {
				creg = "%rd2"
			}
			body += "ld.global." + rt + " " + creg + ", [%in+8];\n"
			operands += ", " + creg
		}
		old := "%r3"
		if w == 64 {
			old = "%rd3"
		}
		body += "atom.global." + x.op + "." + x.ty + " " + old + ", [%out], " + operands + ";\nst.global." + rt + " [%out+8], " + old + ";"
		c := atomCase("atom.global."+x.op+"."+x.ty+" "+hex(x.init)+" "+hex(x.b), x.isa, "", body, []uint64{x.init, 0}, x.newv, x.init)
		c.In = []uint64{x.b, x.c}
		if w == 32 {
			c.Size = 4
		}
		cs = append(cs, c)
	}
	// many threads
	sumT := func(n int) uint64 { return uint64(n * (n - 1) / 2) }
	cs = append(cs,
		atomCase("atom.global.add.u32 by 128 threads", isaAtom, "", "atom.global.add.u32 %r1, [%out], %t;", []uint64{1000}, 1000+sumT(128)),
		atomCase("red.global.add.u64 by 64 threads", isaRed, "", "cvt.u64.u32 %rd1, %t;\nred.global.add.u64 [%out], %rd1;", []uint64{1 << 40}, 1<<40+sumT(64)),
		atomCase("red.global.max.s32 by 64 threads", isaRed, "", "sub.s32 %r1, %t, 40;\nred.global.max.s32 [%out], %r1;", []uint64{0xffffffff_ffffff00}, 0xffffffff_00000017),
		atomCase("red.global.min.u32 by 64 threads", isaRed, "", "add.u32 %r1, %t, 5;\nred.global.min.u32 [%out], %r1;", []uint64{100}, 5),
		atomCase("atom.global.inc.u32 wraps by 64 threads", isaAtom, "", "atom.global.inc.u32 %r1, [%out], 9;", []uint64{0}, 64%10),
		atomCase("red.global.or.b32 by 32 threads", isaRed, "", "mov.u32 %r1, 1;\nshl.b32 %r1, %r1, %t;\nred.global.or.b32 [%out], %r1;", []uint64{0}, 0xffffffff),
		atomCase("red.global.add.f32 by 64 threads", isaAtomF32, "", "cvt.rn.f32.u32 %r1, %t;\nred.global.add.f32 [%out], %r1;", []uint64{0}, b32(float32(sumT(64)))),
	)
	cs[len(cs)-7].Threads = 128
	for i := len(cs) - 6; i < len(cs); i++ {
		cs[i].Threads = 64
	}
	cs[len(cs)-2].Threads = 32
	cs[len(cs)-6].Size = 8
	for _, i := range []int{1, 2, 3, 4, 5, 6, 7} {
		if cs[len(cs)-i].Name != "atomic/red.global.add.u64 by 64 threads" {
			cs[len(cs)-i].Size = 4
		}
	}
	// shared memory: thread 0 initializes, all add, thread 0 reads back
	sh := ".shared .align 8 .b8 sh[16];"
	shBody := func(init, op string) string {
		return "mov.u32 %r9, sh;\nsetp.eq.u32 %p1, %t, 0;\n@%p1 st.shared.u64 [%r9], " + init + ";\nbar.sync 0;\n" + op + "\nbar.sync 0;\n@%p1 ld.shared.u64 %rd2, [%r9];\n@%p1 st.global.u64 [%out], %rd2;"
	}
	for _, x := range []struct {
		name, init, op string
		threads        int
		want           uint64
	}{
		{"atom.shared.add.u32 by 64 threads", "5", "atom.shared.add.u32 %r1, [%r9], 2;", 64, 5 + 128},
		{"atom.shared.add.u64 by 64 threads", "0xffffffff", "cvt.u64.u32 %rd1, %t;\natom.shared.add.u64 %rd3, [%r9], %rd1;", 64, 0xffffffff + sumT(64)},
		{"atom.shared.max.s32 by 64 threads", "0", "sub.s32 %r1, 0, %t;\natom.shared.max.s32 %r2, [%r9], %r1;", 64, 0},
		{"atom.shared.min.s64 by 64 threads", "0", "cvt.s64.s32 %rd1, %t;\nneg.s64 %rd1, %rd1;\natom.shared.min.s64 %rd3, [%r9], %rd1;", 64, uint64(math.MaxUint64 - 62)},
		{"atom.shared.cas.b32 one wins", "0", "atom.shared.cas.b32 %r2, [%r9], 0, 1;\nsetp.ne.u32 %p2, %r2, 0;\n@%p2 atom.shared.add.u32 %r3, [%r9+4], 1;", 64, 63<<32 | 1},
		{"atom.shared.exch.b32 last value is a thread's", "0", "atom.shared.exch.b32 %r2, [%r9], 7;", 64, 7},
		{"atom.shared.xor.b32 by 32 threads", "0", "mov.u32 %r1, 3;\nshl.b32 %r1, %r1, %t;\natom.shared.xor.b32 %r2, [%r9], %r1;", 32, 1},
		{"atom.shared.dec.u32 by 64 threads", "100", "atom.shared.dec.u32 %r2, [%r9], 1000;", 64, 36},
		{"atom.shared.add.f32 subnormal", "0x00000001", "setp.eq.u32 %p3, %t, 1;\n@%p3 atom.shared.add.f32 %r2, [%r9], 0f00000001;", 2, 2},
		{"red.shared.and.b64 by 64 threads", "-1", "mov.u64 %rd1, -1;\ncvt.u32.u32 %r1, %t;\nshl.b64 %rd4, 1, %r1;\nxor.b64 %rd1, %rd1, %rd4;\nred.shared.and.b64 [%r9], %rd1;", 64, 0},
	} {
		c := atomCase(x.name, isaAtom, sh, shBody(x.init, x.op), nil, x.want)
		if x.name == "atomic/atom.shared.add.f32 subnormal" || x.name == "atom.shared.add.f32 subnormal" {
			c.ISA = isaAtomF32
		}
		if x.name == "red.shared.and.b64 by 64 threads" {
			c.ISA = isaRed
		}
		c.Threads = x.threads
		cs = append(cs, c)
	}
	return cs
}

func memoryCases() []Case {
	m := func(name, isa, decls, body string, in []uint64, size int, want ...uint64) Case {
		return Case{Name: "memory/" + name, Class: "memory", ISA: isa, Decls: decls, Body: body, In: in, Size: size, Want: want}
	}
	in4 := []uint64{0x1111111122222222, 0x3333333344444444, 0x5555555566666666, 0x7777777788888888}
	sh := ".shared .align 16 .b8 sh[64];"
	return []Case{
		m("ld.global.v2.u32", isaLdVec, "", "ld.global.v2.u32 {%r1, %r2}, [%in+8];\nst.global.u32 [%out], %r2;\nst.global.u32 [%out+8], %r1;", in4, 4, 0x33333333, 0x44444444),
		m("ld.global.v4.u32", isaLdVec, "", "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%in+16];\nst.global.u32 [%out], %r4;\nst.global.u32 [%out+8], %r1;", in4, 4, 0x77777777, 0x66666666),
		m("ld.global.v2.u64", isaLdVec, "", "ld.global.v2.u64 {%rd1, %rd2}, [%in+16];\nst.global.u64 [%out], %rd2;\nst.global.u64 [%out+8], %rd1;", in4, 8, in4[3], in4[2]),
		m("st.global.v4.b32", isaLdVec, "", "mov.u32 %r1, 1;\nmov.u32 %r2, 2;\nmov.u32 %r3, 3;\nmov.u32 %r4, 4;\nst.global.v4.b32 [%out], {%r1, %r2, %r3, %r4};", nil, 8, 2<<32|1, 4<<32|3),
		m("st.global.v2.f64", isaLdVec, "", "mov.f64 %rd1, 0d3FF0000000000000;\nmov.f64 %rd2, 0dC000000000000000;\nst.global.v2.f64 [%out], {%rd1, %rd2};", nil, 8, b64(1), b64(-2)),
		m("ld.global.v4.u16", isaLdVec, "", "ld.global.v4.u16 {%h1, %h2, %h3, %h4}, [%in];\nst.global.u16 [%out], %h4;\nst.global.u16 [%out+8], %h1;", in4, 2, 0x1111, 0x2222),
		m("ld.global.s8 into b32", isaLdExt, "", "ld.global.s8 %r1, [%in+3];\nst.global.b32 [%out], %r1;", []uint64{0x00000000_80000000}, 4, 0xffffff80),
		m("ld.global.u8 into b32", isaLdExt, "", "ld.global.u8 %r1, [%in+3];\nst.global.b32 [%out], %r1;", []uint64{0x00000000_80000000}, 4, 0x80),
		m("ld.global.s16 into b64", isaLdExt, "", "ld.global.s16 %rd1, [%in+2];\nst.global.b64 [%out], %rd1;", []uint64{0x0000_0000_9234_0000}, 8, 0xffffffffffff9234),
		m("ld.global.s32 into b64", isaLdExt, "", "ld.global.s32 %rd1, [%in];\nst.global.b64 [%out], %rd1;", []uint64{0x1234_5678_fedc_ba98}, 8, 0xfffffffffedcba98),
		m("ld.global.u32 into b64", isaLdExt, "", "ld.global.u32 %rd1, [%in];\nst.global.b64 [%out], %rd1;", []uint64{0x1234_5678_fedc_ba98}, 8, 0xfedcba98),
		m("st.global.b8 of b32", isaLdExt, "", "mov.u32 %r1, 0x12345678;\nst.global.b8 [%out+1], %r1;", nil, 8, 0xa5a5a5a5a5a578a5),
		m("st.global.u16 of b64", isaLdExt, "", "mov.u64 %rd1, 0x123456789abcdef0;\nst.global.u16 [%out+2], %rd1;", nil, 8, 0xa5a5a5a5def0a5a5),
		m("ld.global.nc.u32", "ld.global.nc: load from global memory through the non-coherent cache: the value is the memory's.", "", "ld.global.nc.u32 %r1, [%in+4];\nst.global.u32 [%out], %r1;", in4, 4, 0x11111111),
		m("ld.global.cg and st.global.cs", "Cache operators (.ca, .cg, .cs, .lu, .cv; .wb, .cg, .cs, .wt) are performance hints: they do not change the values loaded or stored.", "",
			"ld.global.cg.u32 %r1, [%in];\nld.global.cs.u32 %r2, [%in+8];\nadd.u32 %r1, %r1, %r2;\nst.global.cs.u32 [%out], %r1;", in4, 4, 0x66666666),
		m("ld.volatile.global and st.relaxed.gpu", "ld.volatile and ld/st.relaxed.scope read and write the memory's value.", "",
			"ld.volatile.global.u32 %r1, [%in];\nst.relaxed.gpu.global.u32 [%out], %r1;", in4, 4, 0x22222222),
		m("ld.shared.v2.f32", isaLdVec, sh, "mov.u32 %r9, sh;\nmov.b32 %r1, 0f3F800000;\nmov.b32 %r2, 0f40000000;\nst.shared.v2.f32 [%r9+8], {%r1, %r2};\nld.shared.v2.f32 {%r3, %r4}, [%r9+8];\nst.global.b32 [%out], %r4;\nst.global.b32 [%out+8], %r3;", nil, 4, b32(2), b32(1)),
		m("ld.shared.v4.b32 through a 64-bit address", isaLdVec, sh, "mov.u64 %rd9, sh;\nst.shared.v4.b32 [%rd9+16], {%t, 5, 6, 7};\nld.shared.v4.b32 {%r1, %r2, %r3, %r4}, [%rd9+16];\nadd.u32 %r1, %r1, %r4;\nst.global.b32 [%out], %r1;", nil, 4, 7),
		m("st.local and ld.local", isaStateVars, "", ".local .align 8 .b8 buf[32];\nmov.u64 %rd9, buf;\nst.local.u32 [%rd9+4], 41;\nst.local.u64 [%rd9+8], 0x123456789;\nld.local.u32 %r1, [%rd9+4];\nld.local.u64 %rd1, [%rd9+8];\nst.global.u32 [%out], %r1;\nst.global.u64 [%out+8], %rd1;", nil, 8, 0xa5a5a5a5_00000029, 0x123456789),
		m("ld.param.u64 of the kernel's parameter", "ld.param reads a kernel parameter's value.", "", "ld.param.u64 %rd1, [pin];\ncvta.to.global.u64 %rd1, %rd1;\nsetp.eq.u64 %p1, %rd1, %in;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%out], %r1;", nil, 4, 1),
		m("ld.const of a module variable", isaStateVars, ".const .align 4 .b32 tab[4] = {11, 22, 33, 44};", "ld.const.u32 %r1, [tab+8];\nst.global.u32 [%out], %r1;", nil, 4, 33),
		m("ld.global of an initialized module variable", isaStateVars, ".global .align 4 .u32 gv[2] = {7, 9};", "mov.u64 %rd1, gv;\nld.global.u32 %r1, [%rd1+4];\nst.global.u32 [%out], %r1;", nil, 4, 9),
		m("st.global then ld.global of a module variable", isaStateVars, ".global .align 8 .u64 gw;", "st.global.u64 [gw], 0x1122334455667788;\nld.global.u64 %rd1, [gw];\nst.global.u64 [%out], %rd1;", nil, 8, 0x1122334455667788),
		m("generic ld of a shared address", isaCvta, sh, "mov.u64 %rd9, sh;\nst.shared.u32 [%rd9+4], 77;\ncvta.shared.u64 %rd1, %rd9;\nld.u32 %r1, [%rd1+4];\nst.global.u32 [%out], %r1;", nil, 4, 77),
		m("generic st of a local address", isaCvta, "", ".local .align 8 .b8 buf[16];\nmov.u64 %rd9, buf;\ncvta.local.u64 %rd1, %rd9;\nst.u32 [%rd1+8], 55;\nld.local.u32 %r1, [%rd9+8];\nst.global.u32 [%out], %r1;", nil, 4, 55),
		m("cvta.to.shared of cvta.shared", isaCvta, sh, "mov.u64 %rd9, sh;\ncvta.shared.u64 %rd1, %rd9;\ncvta.to.shared.u64 %rd2, %rd1;\nsetp.eq.u64 %p1, %rd2, %rd9;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%out], %r1;", nil, 4, 1),
		m("isspacep.shared of a shared address", isaCvta, sh, "mov.u64 %rd9, sh;\ncvta.shared.u64 %rd1, %rd9;\nisspacep.shared %p1, %rd1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%out], %r1;", nil, 4, 1),
		m("isspacep.global of a shared address", isaCvta, sh, "mov.u64 %rd9, sh;\ncvta.shared.u64 %rd1, %rd9;\nisspacep.global %p1, %rd1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%out], %r1;", nil, 4, 0),
		m("isspacep.global of a global address", isaCvta, "", "ld.param.u64 %rd1, [pin];\nisspacep.global %p1, %rd1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%out], %r1;", nil, 4, 1),
		m("isspacep.shared of a global address", isaCvta, "", "ld.param.u64 %rd1, [pin];\nisspacep.shared %p1, %rd1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%out], %r1;", nil, 4, 0),
		m("isspacep.local of a local address", isaCvta, "", ".local .align 8 .b8 buf[16];\nmov.u64 %rd9, buf;\ncvta.local.u64 %rd1, %rd9;\nisspacep.local %p1, %rd1;\nselp.u32 %r1, 1, 0, %p1;\nst.global.u32 [%out], %r1;", nil, 4, 1),
		m("isspacep.const of a const address", isaCvta, ".const .align 4 .b32 tab[4] = {1, 2, 3, 4};", "mov.u64 %rd9, tab;\ncvta.const.u64 %rd1, %rd9;\nisspacep.const %p1, %rd1;\nselp.u32 %r1, 1, 0, %p1;\nld.u32 %r2, [%rd1+12];\nmad.lo.u32 %r1, %r2, 10, %r1;\nst.global.u32 [%out], %r1;", nil, 4, 41),
		m("cvta.global of a global variable and generic ld", isaCvta, ".global .align 4 .u32 gv[2] = {7, 9};", "mov.u64 %rd9, gv;\ncvta.global.u64 %rd1, %rd9;\nld.u32 %r1, [%rd1];\nst.global.u32 [%out], %r1;", nil, 4, 7),
		m("generic ld.v2 of the input", isaLdVec, "", "ld.param.u64 %rd1, [pin];\nld.v2.u32 {%r1, %r2}, [%rd1+24];\nst.global.u32 [%out], %r1;", in4, 4, 0x88888888),
	}
}

func itoa(n int) string {
	const d = "0123456789"
	if n < 10 {
		return d[n : n+1]
	}
	return itoa(n/10) + d[n%10:n%10+1]
}

func hex(v uint64) string {
	const d = "0123456789abcdef"
	s := ""
	for {
		s = d[v&15:v&15+1] + s
		v >>= 4
		if v == 0 {
			return "0x" + s
		}
	}
}

func replace(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}
