package ptx

// raceShadow records, for each byte of shared memory, the last thread to
// write it and the last to read it since the block's last barrier, so
// that an access by another warp to the same byte, one of them a write,
// is caught as a race (compute-sanitizer's racecheck). Lanes of one warp
// run in lockstep here, so they are not checked against each other.
type raceShadow struct {
	w, r  []access
	epoch uint32
}

type access struct {
	epoch  uint32
	thread int32 // thread index in the block; -1: several warps read
	line   int32
}

//go:norace
func newRaceShadow(n int) *raceShadow {
	return &raceShadow{w: make([]access, n), r: make([]access, n)}
}

// newBlock and barrier start a new interval between barriers.
//
//go:norace
func (s *raceShadow) newBlock() uint32 { s.epoch++; return s.epoch }

//go:norace
func (s *raceShadow) barrier() uint32 { s.epoch++; return s.epoch }

//go:norace
func (s *raceShadow) check(x *exec, w *warp, l int, in *inst, a, n int, write bool) *Fault {
	me := int32(w.id*32 + l)
	myWarp := me / 32
	for i := a; i < a+n; i++ {
		wr := &s.w[i]
		if wr.epoch == s.epoch && wr.thread/32 != myWarp {
			return s.fault(x, w, l, in, a, n, write, wr)
		}
		rd := &s.r[i]
		if write {
			if rd.epoch == s.epoch && (rd.thread < 0 || rd.thread/32 != myWarp) {
				return s.fault(x, w, l, in, a, n, write, rd)
			}
			*wr = access{s.epoch, me, in.line}
		} else if rd.epoch != s.epoch {
			*rd = access{s.epoch, me, in.line}
		} else if rd.thread >= 0 && rd.thread/32 != myWarp {
			rd.thread = -1 - rd.thread // several warps; keep one to report
		}
	}
	return nil
}

//go:norace
func (s *raceShadow) fault(x *exec, w *warp, l int, in *inst, a, n int, write bool, other *access) *Fault {
	f := x.fault(w, l, in, SharedRace, spShared, uint64(a), n, write)
	t := other.thread
	if t < 0 {
		t = -1 - t
	}
	bx, by := int(x.l.Block[0]), int(x.l.Block[1])
	f.Other = Thread{x.block, [3]uint32{uint32(int(t) % bx), uint32(int(t) / bx % by), uint32(int(t) / (bx * by))}}
	f.OtherLine = int(other.line)
	return f
}
