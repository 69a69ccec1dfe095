package isacases

import "fmt"

const (
	isaShfl         = "shfl.sync: lane[4:0] = laneid; bval[4:0] = b[4:0]; cval[4:0] = c[4:0]; segmask[4:0] = c[12:8]; maxLane = (lane & segmask) | (cval & ~segmask); minLane = lane & segmask; .up: j = lane - bval, pval = (j >= maxLane); .down: j = lane + bval, pval = (j <= maxLane); .bfly: j = lane ^ bval, pval = (j <= maxLane); .idx: j = minLane | (bval & ~segmask), pval = (j <= maxLane); if (!pval) j = lane; d = R[j]; p = pval."
	isaShflInactive = "shfl.sync: If the source lane j is inactive or not in membermask, the value of d is undefined. (The interpreter gives 0, as GPUs running cuda-samples' reduce7 do.)"
	isaVote         = "vote.sync: .all: True if source predicate is True for all non-exited threads in membermask; .any: True if source predicate is True for some thread in membermask; .uni: True if source predicate has the same value in all non-exited threads in membermask; .ballot: d's bit i is the predicate of lane i for the lanes in membermask (0 for the others); a negated predicate (!a) uses the logical complement."
	isaActive       = "activemask: Queries predicate from all threads in a warp and returns a 32-bit mask of the threads currently active (executing the instruction); exited and inactive threads give 0 bits."
	isaMatch        = "match.sync: .any: d is the mask of non-exited threads in membermask whose a has the same value as this thread's; .all: d is membermask's non-exited threads if all of them have the same a, else 0, and p says which."
	isaRedux        = "redux.sync: performs a reduction (.add, .min, .max on .u32/.s32; .and, .or, .xor on .b32) of a across the non-exited threads in membermask, and every participating thread receives the result."
)

// warp32 is a 32-lane case writing one .b32 per lane; want[i] of lane i
// (Sentinel for a lane that writes nothing).
func warp32(name, isa, body string, want func(lane int) (uint64, bool)) Case {
	c := Case{Name: "warp/" + name, Class: "warp", ISA: isa, Body: body, Threads: 32, Size: 4}
	for l := 0; l < 32; l++ {
		w, ok := want(l)
		if !ok {
			w = Sentinel
		}
		c.Want = append(c.Want, w)
	}
	return c
}

// The value every lane shuffles: lane*10+1.
const shflSetup = "mad.lo.u32 %r1, %t, 10, 1;\n"

func shflVal(l int) uint64 { return uint64(l*10 + 1) }

// shflRef is the ISA's shuffle of lane's value; the predicate adds 0x10000.
func shflRef(mode string, lane, b, c int) uint64 {
	bval, cval, seg := b&31, c&31, c>>8&31
	maxLane := lane&seg | cval&^seg
	minLane := lane & seg
	var j int
	var p bool
	switch mode {
	case "up":
		j = lane - bval
		p = j >= maxLane
	case "down":
		j = lane + bval
		p = j <= maxLane
	case "bfly":
		j = lane ^ bval
		p = j <= maxLane
	case "idx":
		j = minLane | bval&^seg
		p = j <= maxLane
	}
	if !p {
		j = lane
	}
	v := shflVal(j)
	if p {
		v += 0x10000
	}
	return v
}

func warpCases() []Case {
	var cs []Case
	all := func(int) bool { return true }
	// shuffles of the whole warp, in every mode, with clamps and segments
	for _, s := range []struct {
		mode string
		b, c int
	}{
		{"idx", 5, 0x1f}, {"idx", 37, 0x1f}, {"idx", 20, 0x0f}, {"idx", 2, 0x181f}, {"idx", 13, 0x101f},
		{"up", 3, 0}, {"up", 40, 0}, {"up", 2, 0x1000}, {"up", 1, 0x1c00},
		{"down", 3, 0x1f}, {"down", 2, 0x181f}, {"down", 1, 0x07}, {"down", 31, 0x1f},
		{"bfly", 1, 0x1f}, {"bfly", 16, 0x1f}, {"bfly", 6, 0x181f}, {"bfly", 4, 0x03},
	} {
		body := shflSetup + fmt.Sprintf("shfl.sync.%s.b32 %%r2|%%p1, %%r1, %d, %#x, 0xffffffff;\n", s.mode, s.b, s.c) +
			"selp.u32 %r3, 0x10000, 0, %p1;\nadd.u32 %r2, %r2, %r3;\nst.global.b32 [%oa], %r2;"
		cs = append(cs, warp32(fmt.Sprintf("shfl.sync.%s b=%d c=%#x", s.mode, s.b, s.c), isaShfl, body,
			func(l int) (uint64, bool) { return shflRef(s.mode, l, s.b, s.c), all(l) }))
	}
	// a register source lane operand, lane-dependent
	cs = append(cs, warp32("shfl.sync.idx b=31-lane", isaShfl, shflSetup+
		"sub.u32 %r4, 31, %t;\nshfl.sync.idx.b32 %r2, %r1, %r4, 0x1f, 0xffffffff;\nst.global.b32 [%oa], %r2;",
		func(l int) (uint64, bool) { return shflVal(31 - l), true }))
	// exited lanes: lanes 16..31 exit; lanes 8..15 read from them
	cs = append(cs, open(warp32("shfl.sync.idx from exited lanes", isaShflInactive, shflSetup+
		"setp.ge.u32 %p2, %t, 16;\n@%p2 exit;\nadd.u32 %r4, %t, 8;\nshfl.sync.idx.b32 %r2, %r1, %r4, 0x1f, 0x0000ffff;\nst.global.b32 [%oa], %r2;",
		func(l int) (uint64, bool) {
			if l >= 16 {
				return 0, false
			}
			if l+8 >= 16 {
				return 0, true
			}
			return shflVal(l + 8), true
		})))
	cs = append(cs, warp32("shfl.sync.bfly after exits, sources alive", isaShfl, shflSetup+
		"setp.ge.u32 %p2, %t, 16;\n@%p2 exit;\nshfl.sync.bfly.b32 %r2, %r1, 3, 0x1f, 0x0000ffff;\nst.global.b32 [%oa], %r2;",
		func(l int) (uint64, bool) { return shflVal(l ^ 3), l < 16 }))
	// divergent lanes: only even lanes shuffle; bfly 1 reads odd lanes
	cs = append(cs, open(warp32("shfl.sync.bfly from inactive lanes", isaShflInactive, shflSetup+
		"and.b32 %r5, %t, 1;\nsetp.ne.u32 %p2, %r5, 0;\n@%p2 bra ODD;\nshfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, 0x55555555;\nst.global.b32 [%oa], %r2;\nODD:",
		func(l int) (uint64, bool) { return 0, l%2 == 0 })))
	cs = append(cs, warp32("shfl.sync.bfly among divergent lanes", isaShfl, shflSetup+
		"and.b32 %r5, %t, 1;\nsetp.ne.u32 %p2, %r5, 0;\n@%p2 bra ODD;\nshfl.sync.bfly.b32 %r2, %r1, 2, 0x1f, 0x55555555;\nst.global.b32 [%oa], %r2;\nODD:",
		func(l int) (uint64, bool) { return shflVal(l ^ 2), l%2 == 0 }))
	// predicated-off lanes
	cs = append(cs, warp32("shfl.sync.down predicated to lanes < 16", isaShfl, shflSetup+
		"setp.lt.u32 %p2, %t, 16;\nmov.u32 %r2, 7;\n@%p2 shfl.sync.down.b32 %r2, %r1, 4, 0x0f, 0x0000ffff;\nst.global.b32 [%oa], %r2;",
		func(l int) (uint64, bool) {
			if l >= 16 {
				return 7, true
			}
			return shflRef("down", l, 4, 0x0f) &^ 0x10000, true
		}))
	cs = append(cs, open(warp32("shfl.sync.idx predicated off source", isaShflInactive, shflSetup+
		"setp.lt.u32 %p2, %t, 16;\nmov.u32 %r2, 7;\nadd.u32 %r4, %t, 16;\n@%p2 shfl.sync.idx.b32 %r2, %r1, %r4, 0x1f, 0x0000ffff;\nst.global.b32 [%oa], %r2;",
		func(l int) (uint64, bool) {
			if l >= 16 {
				return 7, true
			}
			return 0, true
		})))

	// vote
	vote := func(name, setup, insn string, want func(l int) (uint64, bool)) {
		cs = append(cs, warp32(name, isaVote, setup+insn+"\nst.global.b32 [%oa], %r2;", want))
	}
	pred := func(cond string) string { return "setp." + cond + ";\n" }
	const toR2 = "\nselp.u32 %r2, 1, 0, %p1;"
	vote("vote.sync.all true", pred("lt.u32 %p3, %t, 32"), "vote.sync.all.pred %p1, %p3, 0xffffffff;"+toR2, func(l int) (uint64, bool) { return 1, true })
	vote("vote.sync.all one false", pred("ne.u32 %p3, %t, 5"), "vote.sync.all.pred %p1, %p3, 0xffffffff;"+toR2, func(l int) (uint64, bool) { return 0, true })
	vote("vote.sync.any one true", pred("eq.u32 %p3, %t, 5"), "vote.sync.any.pred %p1, %p3, 0xffffffff;"+toR2, func(l int) (uint64, bool) { return 1, true })
	vote("vote.sync.any none", pred("gt.u32 %p3, %t, 40"), "vote.sync.any.pred %p1, %p3, 0xffffffff;"+toR2, func(l int) (uint64, bool) { return 0, true })
	vote("vote.sync.any negated", pred("lt.u32 %p3, %t, 40"), "vote.sync.any.pred %p1, !%p3, 0xffffffff;"+toR2, func(l int) (uint64, bool) { return 0, true })
	vote("vote.sync.uni same", pred("lt.u32 %p3, %t, 40"), "vote.sync.uni.pred %p1, %p3, 0xffffffff;"+toR2, func(l int) (uint64, bool) { return 1, true })
	vote("vote.sync.uni differs", pred("lt.u32 %p3, %t, 16"), "vote.sync.uni.pred %p1, %p3, 0xffffffff;"+toR2, func(l int) (uint64, bool) { return 0, true })
	vote("vote.sync.ballot lane%3==0", "rem.u32 %r5, %t, 3;\n"+pred("eq.u32 %p3, %r5, 0"), "vote.sync.ballot.b32 %r2, %p3, 0xffffffff;",
		func(l int) (uint64, bool) { return 0x49249249, true })
	vote("vote.sync.ballot negated", "rem.u32 %r5, %t, 3;\n"+pred("eq.u32 %p3, %r5, 0"), "vote.sync.ballot.b32 %r2, !%p3, 0xffffffff;",
		func(l int) (uint64, bool) { return 0xb6db6db6, true })
	exit20 := "setp.ge.u32 %p2, %t, 20;\n@%p2 exit;\n"
	vote("vote.sync.ballot after exits", exit20+pred("ne.u32 %p3, %t, 100"), "vote.sync.ballot.b32 %r2, %p3, 0x000fffff;",
		func(l int) (uint64, bool) { return 0xfffff, l < 20 })
	vote("vote.sync.all after exits", exit20+pred("lt.u32 %p3, %t, 20"), "vote.sync.all.pred %p1, %p3, 0x000fffff;"+toR2,
		func(l int) (uint64, bool) { return 1, l < 20 })
	vote("vote.sync.uni after exits", exit20+pred("lt.u32 %p3, %t, 20"), "vote.sync.uni.pred %p1, %p3, 0x000fffff;"+toR2,
		func(l int) (uint64, bool) { return 1, l < 20 })
	vote("vote.sync.ballot divergent odd lanes", "and.b32 %r5, %t, 1;\nsetp.eq.u32 %p2, %r5, 0;\nmov.u32 %r2, 3;\n@%p2 bra EVEN;\n"+pred("lt.u32 %p3, %t, 16"),
		"vote.sync.ballot.b32 %r2, %p3, 0xaaaaaaaa;\nEVEN:", func(l int) (uint64, bool) {
			if l%2 == 0 {
				return 3, true
			}
			return 0x0000aaaa, true
		})
	vote("vote.sync.ballot predicated lanes < 16", pred("lt.u32 %p2, %t, 16")+"and.b32 %r5, %t, 1;\n"+pred("eq.u32 %p3, %r5, 0")+"mov.u32 %r2, 3;\n",
		"@%p2 vote.sync.ballot.b32 %r2, %p3, 0x0000ffff;", func(l int) (uint64, bool) {
			if l >= 16 {
				return 3, true
			}
			return 0x5555, true
		})
	vote("vote.sync.any predicated lanes < 16", pred("lt.u32 %p2, %t, 16")+pred("eq.u32 %p3, %t, 20")+"mov.u32 %r2, 3;\nselp.u32 %r2, 1, 0, %p3;\n",
		"@%p2 vote.sync.any.pred %p1, %p3, 0x0000ffff;\n@%p2 selp.u32 %r2, 1, 0, %p1;", func(l int) (uint64, bool) {
			if l == 20 {
				return 1, true
			}
			return 0, true
		})

	// activemask
	am := func(name, setup string, want func(l int) (uint64, bool)) {
		cs = append(cs, warp32(name, isaActive, setup+"activemask.b32 %r2;\nst.global.b32 [%oa], %r2;\nSKIP:", want))
	}
	am("activemask full warp", "", func(l int) (uint64, bool) { return 0xffffffff, true })
	am("activemask after exits", "setp.ge.u32 %p2, %t, 24;\n@%p2 exit;\n", func(l int) (uint64, bool) { return 0x00ffffff, l < 24 })
	am("activemask in a branch", "setp.ge.u32 %p2, %t, 10;\n@%p2 bra SKIP;\n", func(l int) (uint64, bool) { return 0x3ff, l < 10 })
	cs = append(cs, warp32("activemask both sides of a branch", isaActive,
		"setp.ge.u32 %p2, %t, 10;\n@%p2 bra HIGH;\nactivemask.b32 %r2;\nbra.uni DONE;\nHIGH:\nactivemask.b32 %r2;\nDONE:\nst.global.b32 [%oa], %r2;",
		func(l int) (uint64, bool) {
			if l < 10 {
				return 0x3ff, true
			}
			return 0xfffffc00, true
		}))

	// match, redux
	cs = append(cs,
		warp32("match.any.sync.b32 groups of 4", isaMatch, "shr.u32 %r1, %t, 2;\nmatch.any.sync.b32 %r2, %r1, 0xffffffff;\nst.global.b32 [%oa], %r2;",
			func(l int) (uint64, bool) { return uint64(0xf) << (l &^ 3), true }),
		warp32("match.all.sync.b32 all equal", isaMatch, "mov.u32 %r1, 9;\nmatch.all.sync.b32 %r2|%p1, %r1, 0xffffffff;\nselp.u32 %r2, %r2, 7, %p1;\nst.global.b32 [%oa], %r2;",
			func(l int) (uint64, bool) { return 0xffffffff, true }),
		warp32("match.all.sync.b32 differ", isaMatch, "match.all.sync.b32 %r2|%p1, %t, 0xffffffff;\nselp.u32 %r3, 7, 0, %p1;\nadd.u32 %r2, %r2, %r3;\nst.global.b32 [%oa], %r2;",
			func(l int) (uint64, bool) { return 0, true }),
		warp32("match.any.sync.b64 after exits", isaMatch, exit20+"and.b32 %r1, %t, 1;\ncvt.u64.u32 %rd1, %r1;\nmatch.any.sync.b64 %r2, %rd1, 0x000fffff;\nst.global.b32 [%oa], %r2;",
			func(l int) (uint64, bool) {
				if l%2 == 0 {
					return 0x55555 & 0xfffff, l < 20
				}
				return 0xaaaaa, l < 20
			}),
		warp32("redux.sync.add.u32", isaRedux, "redux.sync.add.u32 %r2, %t, 0xffffffff;\nst.global.b32 [%oa], %r2;",
			func(l int) (uint64, bool) { return 496, true }),
		warp32("redux.sync.min.s32", isaRedux, "sub.s32 %r1, 10, %t;\nredux.sync.min.s32 %r2, %r1, 0xffffffff;\nst.global.b32 [%oa], %r2;",
			func(l int) (uint64, bool) { return 0xffffffeb, true }),
		warp32("redux.sync.max.u32 after exits", isaRedux, exit20+"redux.sync.max.u32 %r2, %t, 0x000fffff;\nst.global.b32 [%oa], %r2;",
			func(l int) (uint64, bool) { return 19, l < 20 }),
		warp32("redux.sync.or.b32", isaRedux, "setp.lt.u32 %p2, %t, 8;\nsetp.ge.u32 %p3, %t, 16;\nor.pred %p2, %p2, %p3;\n@%p2 bra SKIP;\nmov.u32 %r1, 1;\nshl.b32 %r1, %r1, %t;\nredux.sync.or.b32 %r2, %r1, 0x0000ff00;\nst.global.b32 [%oa], %r2;\nSKIP:",
			func(l int) (uint64, bool) { return 0xff00, l >= 8 && l < 16 }),
		warp32("redux.sync.xor.b32 divergent", isaRedux, "setp.ge.u32 %p2, %t, 8;\n@%p2 bra SKIP;\nadd.u32 %r1, %t, 1;\nredux.sync.xor.b32 %r2, %r1, 0x000000ff;\nst.global.b32 [%oa], %r2;\nSKIP:",
			func(l int) (uint64, bool) { return 8, l < 8 }),
	)
	return cs
}
