package ptx

import (
	"fmt"
	"math/bits"
	"time"
)

// runWarp runs a warp until none of its lanes can proceed (all exited,
// or waiting at a barrier).
//
//go:norace
func (x *exec) runWarp(w *warp) error {
	code := x.p.code
	r := w.r
	var nInst, nLane int64
	defer func() {
		x.st.WarpInstructions += nInst
		x.st.LaneInstructions += nLane
	}()
	for w.mask != 0 {
		if x.l.MaxInstructions > 0 && x.st.WarpInstructions+nInst >= x.l.MaxInstructions {
			l := bits.TrailingZeros32(w.mask)
			return x.trap(w, l, &code[w.pc], fmt.Sprintf("stopped after %d warp instructions", x.l.MaxInstructions))
		}
		in := &code[w.pc]
		m := w.mask
		if in.guard >= 0 {
			g := r[int(in.guard)*32 : int(in.guard)*32+32 : int(in.guard)*32+32]
			var pm uint32
			for mm := m; mm != 0; mm &= mm - 1 {
				l := bits.TrailingZeros32(mm)
				if (g[l]&1 != 0) != in.gneg {
					pm |= 1 << l
				}
			}
			m = pm
		}
		nInst++
		nLane += int64(bits.OnesCount32(m))
		switch in.op {
		case opALU2:
			d, a, b := int(in.d[0])*32, int(in.a[0])*32, int(in.a[1])*32
			f := in.f2
			if d < 0 {
				break
			}
			dd, aa, bb := (*[32]uint64)(r[d:d+32]), (*[32]uint64)(r[a:a+32]), (*[32]uint64)(r[b:b+32])
			if m == 0xffffffff {
				for l := 0; l < 32; l++ {
					dd[l] = f(aa[l], bb[l])
				}
			} else {
				for ; m != 0; m &= m - 1 {
					l := bits.TrailingZeros32(m) & 31
					dd[l] = f(aa[l], bb[l])
				}
			}
		case opALU1:
			d, a := int(in.d[0])*32, int(in.a[0])*32
			if d < 0 {
				break
			}
			f := in.f1
			dd, aa := (*[32]uint64)(r[d:d+32]), (*[32]uint64)(r[a:a+32])
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				dd[l] = f(aa[l])
			}
		case opALU3:
			d, a, b, c := int(in.d[0])*32, int(in.a[0])*32, int(in.a[1])*32, int(in.a[2])*32
			if d < 0 {
				break
			}
			f := in.f3
			dd, aa, bb, cc := (*[32]uint64)(r[d:d+32]), (*[32]uint64)(r[a:a+32]), (*[32]uint64)(r[b:b+32]), (*[32]uint64)(r[c:c+32])
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				dd[l] = f(aa[l], bb[l], cc[l])
			}
		case opALU4:
			if in.d[0] < 0 {
				break
			}
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				r[int(in.d[0])*32+l] = in.f4(r[int(in.a[0])*32+l], r[int(in.a[1])*32+l], r[int(in.a[2])*32+l], r[int(in.a[3])*32+l])
			}
		case opSetp:
			a, b := (*[32]uint64)(r[int(in.a[0])*32:]), (*[32]uint64)(r[int(in.a[1])*32:])
			var c *[32]uint64
			if in.bop != nil {
				c = (*[32]uint64)(r[int(in.a[2])*32:])
			}
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				p := in.cmp(a[l], b[l])
				q := !p
				if c != nil {
					cv := (c[l]&1 != 0) != (in.flags&flNegC != 0)
					p, q = in.bop(p, cv), in.bop(q, cv)
				}
				if in.d[0] >= 0 {
					r[int(in.d[0])*32+l] = b2u(p)
				}
				if in.flags&flPair != 0 && in.d[1] >= 0 {
					r[int(in.d[1])*32+l] = b2u(q)
				}
			}
		case opSelp:
			a, b, c := (*[32]uint64)(r[int(in.a[0])*32:]), (*[32]uint64)(r[int(in.a[1])*32:]), (*[32]uint64)(r[int(in.a[2])*32:])
			neg := in.flags&flNegC != 0
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				v := b[l]
				if (c[l]&1 != 0) != neg {
					v = a[l]
				}
				if in.d[0] >= 0 {
					r[int(in.d[0])*32+l] = in.t.trunc(v)
				}
			}
		case opCarry:
			cc := (*[32]uint64)(r[int(in.a[3])*32:])
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m) & 31
				var c uint64
				if in.na == 3 {
					c = r[int(in.a[2])*32+l]
				}
				var cin uint64
				if in.flags&flCarryIn != 0 {
					cin = cc[l]
				}
				v, cout := in.fc(r[int(in.a[0])*32+l], r[int(in.a[1])*32+l], c, cin)
				if in.d[0] >= 0 {
					r[int(in.d[0])*32+l] = v
				}
				if in.flags&flCarryOut != 0 {
					cc[l] = cout
				}
			}
		case opMovPack:
			w8 := uint(in.t.bits()) / uint(in.na)
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				var v uint64
				for i := 0; i < int(in.na); i++ {
					e := r[int(in.a[i])*32+l]
					if w8 < 64 {
						e &= 1<<w8 - 1
					}
					v |= e << (w8 * uint(i))
				}
				if in.d[0] >= 0 {
					r[int(in.d[0])*32+l] = v
				}
			}
		case opMovUnpack:
			w8 := uint(in.t.bits()) / uint(in.nd)
			for ; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				v := r[int(in.a[0])*32+l]
				for i := 0; i < int(in.nd); i++ {
					if in.d[i] >= 0 {
						e := v >> (w8 * uint(i))
						if w8 < 64 {
							e &= 1<<w8 - 1
						}
						r[int(in.d[i])*32+l] = e
					}
				}
			}
		case opLd, opSt, opAtom:
			if m != 0 {
				if err := x.memOp(w, in, m); err != nil {
					return err
				}
			}
		case opBra:
			if m == w.mask {
				x.advance(w, in.target)
				continue
			}
			if m == 0 {
				break
			}
			for mm := m; mm != 0; mm &= mm - 1 {
				w.lanePC[bits.TrailingZeros32(mm)] = in.target
			}
			for mm := w.mask &^ m; mm != 0; mm &= mm - 1 {
				w.lanePC[bits.TrailingZeros32(mm)] = w.pc + 1
			}
			w.mask = 0
			x.schedule(w)
			continue
		case opCall:
			if m == 0 {
				break
			}
			cs := in.call
			pf := &x.p.funcs[cs.fn]
			for mm := m; mm != 0; mm &= mm - 1 {
				l := bits.TrailingZeros32(mm)
				for _, fr := range w.stack[l] {
					if fr.fn == cs.fn {
						return x.trap(w, l, in, fmt.Sprintf("recursive call of %s is not supported", pf.name))
					}
				}
				if len(w.stack[l]) >= 64 {
					return x.trap(w, l, in, "call stack deeper than 64")
				}
				fb := w.frame[l*x.p.frameBytes : (l+1)*x.p.frameBytes]
				for _, c := range cs.copyIn {
					copy(fb[c.to:c.to+c.n], fb[c.from:c.from+c.n])
				}
				w.stack[l] = append(w.stack[l], callFrame{ret: w.pc + 1, callPC: w.pc, fn: cs.fn, site: cs})
				w.lanePC[l] = pf.entry
			}
			for mm := w.mask &^ m; mm != 0; mm &= mm - 1 {
				w.lanePC[bits.TrailingZeros32(mm)] = w.pc + 1
			}
			w.mask = 0
			x.schedule(w)
			continue
		case opRet, opExit:
			if m == 0 {
				break
			}
			for mm := m; mm != 0; mm &= mm - 1 {
				l := bits.TrailingZeros32(mm)
				n := len(w.stack[l])
				if in.op == opExit || n == 0 {
					w.live &^= 1 << l
					w.stack[l] = w.stack[l][:0]
					x.exited++
					continue
				}
				fr := w.stack[l][n-1]
				w.stack[l] = w.stack[l][:n-1]
				fb := w.frame[l*x.p.frameBytes : (l+1)*x.p.frameBytes]
				for _, c := range fr.site.copyOut {
					copy(fb[c.to:c.to+c.n], fb[c.from:c.from+c.n])
				}
				w.lanePC[l] = fr.ret
			}
			for mm := w.mask &^ m; mm != 0; mm &= mm - 1 {
				w.lanePC[bits.TrailingZeros32(mm)] = w.pc + 1
			}
			w.mask = 0
			x.releaseExited()
			x.schedule(w)
			continue
		case opTrap:
			if m != 0 {
				return x.trap(w, bits.TrailingZeros32(m), in, "trap instruction")
			}
		case opBar, opBarArrive:
			if m == 0 {
				break
			}
			l0 := bits.TrailingZeros32(m)
			id := r[int(in.a[0])*32+l0]
			if id >= 16 {
				return x.trap(w, l0, in, fmt.Sprintf("barrier %d: there are 16", id))
			}
			bar := &x.bars[id]
			exp := x.nthr
			if in.flags&flBarCount != 0 {
				exp = int(uint32(r[int(in.a[1])*32+l0]))
				if exp%32 != 0 {
					// "the value in b must be a multiple of warp size"
					return x.trap(w, l0, in, fmt.Sprintf("barrier %d: thread count %d is not a multiple of the warp size", id, exp))
				}
			}
			if bar.count == 0 {
				bar.expected, bar.popc, bar.all = exp, 0, true
				bar.counted = in.flags&flBarCount != 0
			}
			bar.count += bits.OnesCount32(m)
			red := in.flags&flBarRed != 0
			if in.op == opBar {
				for mm := m; mm != 0; mm &= mm - 1 {
					l := bits.TrailingZeros32(mm)
					w.lanePC[l] = w.pc + 1
					w.barID[l] = int8(id)
					w.redDst[l] = -1
					if red {
						p := (r[int(in.a[2])*32+l]&1 != 0) != (in.flags&flNegC != 0)
						if p {
							bar.popc++
						} else {
							bar.all = false
						}
						w.redDst[l], w.redOp[l] = in.d[0], in.sub
					}
				}
				w.parked |= m
				for mm := w.mask &^ m; mm != 0; mm &= mm - 1 {
					w.lanePC[bits.TrailingZeros32(mm)] = w.pc + 1
				}
				w.mask = 0
			}
			if bar.complete(x.exited) {
				x.release(int8(id))
			}
			if in.op == opBar {
				x.schedule(w)
				continue
			}
		case opWarpSync, opShfl, opVote, opMatch, opRedux:
			if m == 0 {
				break
			}
			// lanes past the block's last thread do not exist: a full mask
			// in a partial warp names the lanes that do
			// and exited lanes take no part: "all non-exited threads named
			// in mask must execute the same intrinsic" (CUDA C++ Programming
			// Guide, Warp Shuffle Functions; likewise the ISA's shfl.sync,
			// vote.sync and bar.warp.sync wait for non-exited threads only)
			member := uint32(r[int(in.a[in.memberArg()])*32+bits.TrailingZeros32(m)]) & w.valid & w.live
			if member&^m != 0 {
				// member lanes are elsewhere: wait for them
				missing := member &^ m
				if missing&^w.live != 0 || w.others == 0 && w.syncp == 0 && missing&^w.parked == missing {
					l := bits.TrailingZeros32(m)
					return &Fault{Kind: BarrierHang, Kernel: x.k.Name, Line: int(in.line), Thread: x.thread(w, l),
						Detail: fmt.Sprintf("%s with member mask %#08x: lanes %#08x do not execute it", opName(in), member, missing)}
				}
				if w.others == 0 && w.syncp == 0 {
					l := bits.TrailingZeros32(m)
					return &Fault{Kind: BarrierHang, Kernel: x.k.Name, Line: int(in.line), Thread: x.thread(w, l),
						Detail: fmt.Sprintf("%s with member mask %#08x: lanes %#08x do not execute it", opName(in), member, missing)}
				}
				w.syncp |= w.mask
				for mm := w.mask; mm != 0; mm &= mm - 1 {
					w.lanePC[bits.TrailingZeros32(mm)] = w.pc
				}
				w.mask = 0
				x.schedule(w)
				if w.mask == 0 {
					return nil
				}
				// the lanes all came back to this instruction: no progress
				if w.pc == int32(in.index(code)) && w.others == 0 && w.mask&member != member {
					l := bits.TrailingZeros32(w.mask)
					return &Fault{Kind: BarrierHang, Kernel: x.k.Name, Line: int(in.line), Thread: x.thread(w, l),
						Detail: fmt.Sprintf("%s with member mask %#08x: lanes %#08x do not execute it", opName(in), member, member&^w.mask)}
				}
				nInst--
				nLane -= int64(bits.OnesCount32(m))
				continue
			}
			x.warpOp(w, in, m)
		case opActivemask:
			// "activemask queries predicated-on active threads": the
			// guard's lanes, which alone write d
			for mm := m; mm != 0; mm &= mm - 1 {
				l := bits.TrailingZeros32(mm)
				if in.d[0] >= 0 {
					r[int(in.d[0])*32+l] = uint64(m)
				}
			}
		case opClock:
			ns := uint64(time.Since(x.start).Nanoseconds())
			var v uint64
			switch special(in.sub) {
			case spClock:
				v = uint64(uint32(ns))
			case spGlobalTimer:
				v = uint64(time.Now().UnixNano())
			case spGlobalTimerLo:
				v = uint64(uint32(time.Now().UnixNano()))
			case spGlobalTimerHi:
				v = uint64(time.Now().UnixNano()) >> 32
			default:
				v = ns
			}
			for mm := m; mm != 0; mm &= mm - 1 {
				if in.d[0] >= 0 {
					r[int(in.d[0])*32+bits.TrailingZeros32(mm)] = v
				}
			}
		case opNop:
		}
		// fall through: the lanes move to the next instruction
		w.pc++
		if w.others != 0 {
			l := bits.TrailingZeros32(w.mask)
			if w.key(l, w.pc) >= w.next {
				x.schedule(w)
			}
		}
	}
	return nil
}

// index returns the instruction's program counter.
//
//go:norace
func (in *inst) index(code []inst) int {
	for i := range code {
		if &code[i] == in {
			return i
		}
	}
	return -1
}

// memberArg is the operand holding a warp-synchronous instruction's member mask.
//
//go:norace
func (in *inst) memberArg() int {
	switch in.op {
	case opShfl:
		return 3
	case opVote, opMatch, opRedux:
		return 1
	}
	return 0
}

//go:norace
func opName(in *inst) string {
	switch in.op {
	case opShfl:
		return "shfl.sync"
	case opVote:
		return "vote.sync"
	case opMatch:
		return "match.sync"
	case opRedux:
		return "redux.sync"
	}
	return "bar.warp.sync"
}

//go:norace
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// complete reports whether a barrier has all its arrivals, given the
// block's exited threads: the ISA's exit says "Barriers exclusively waiting
// on arrivals from exited threads are always released", so a barrier that
// expects the whole block (bar.sync without a thread count, what
// __syncthreads() compiles to) completes once every thread not exited has
// arrived. One with a thread count waits for that count, whichever
// threads give it: the ISA does not say which arrivals it waits for, so
// exits do not release it, and one that the threads left can never
// complete is a BarrierHang fault (the strict answer, a guess).
func (b *barrier) complete(exited int) bool {
	if b.count == 0 {
		return false
	}
	if b.count >= b.expected {
		return true
	}
	return !b.counted && b.count+exited >= b.expected
}

// releaseExited releases the barriers that threads' exits have completed.
//
//go:norace
func (x *exec) releaseExited() {
	for id := range x.bars {
		if x.bars[id].complete(x.exited) {
			x.release(int8(id))
		}
	}
}

// release completes barrier id: its waiting threads proceed.
//
//go:norace
func (x *exec) release(id int8) {
	bar := x.bars[id]
	x.bars[id] = barrier{}
	for _, w := range x.warps {
		for mm := w.parked; mm != 0; mm &= mm - 1 {
			l := bits.TrailingZeros32(mm)
			if w.barID[l] != id {
				continue
			}
			w.parked &^= 1 << l
			if d := w.redDst[l]; d >= 0 {
				var v uint64
				switch w.redOp[l] {
				case redPopc:
					v = uint64(bar.popc)
				case redAnd:
					v = b2u(bar.all)
				case redOr:
					v = b2u(bar.popc > 0)
				}
				w.r[int(d)*32+l] = v
			}
		}
	}
	if x.race != nil {
		x.epoch = x.race.barrier()
	}
}

// warpOp runs shfl.sync, vote.sync and bar.warp.sync on lanes m.
//
//go:norace
func (x *exec) warpOp(w *warp, in *inst, m uint32) {
	r := w.r
	switch in.op {
	case opMatch, opRedux:
		x.matchRedux(w, in, m)
	case opShfl:
		var src [32]uint64
		copy(src[:], r[int(in.a[0])*32:int(in.a[0])*32+32])
		for mm := m; mm != 0; mm &= mm - 1 {
			l := bits.TrailingZeros32(mm)
			b := uint32(r[int(in.a[1])*32+l]) & 0x1f // the ISA: bval[4:0] = b[4:0]
			c := uint32(r[int(in.a[2])*32+l])
			segMask := (c >> 8) & 0x1f
			maxLane := (uint32(l) & segMask) | (c & 0x1f &^ segMask)
			minLane := uint32(l) & segMask
			var j uint32
			var ok bool
			switch in.sub {
			case shUp:
				j = uint32(l) - b
				ok = int32(j) >= int32(maxLane)
			case shDown:
				j = uint32(l) + b
				ok = j <= maxLane
			case shBfly:
				j = uint32(l) ^ b
				ok = j <= maxLane
			default:
				j = minLane | (b &^ segMask)
				ok = j <= maxLane
			}
			if !ok || j >= 32 {
				j = uint32(l) // out of the segment: the lane's own value
				ok = false
			}
			v := uint64(uint32(src[j]))
			if m&(1<<j) == 0 {
				// a source lane that does not execute the shfl.sync: the
				// ISA leaves the value undefined; GPUs give code such as
				// cuda-samples' reduce7 (which reads such lanes) zeros
				v = 0
			}
			if in.d[0] >= 0 {
				r[int(in.d[0])*32+l] = v
			}
			if in.flags&flPair != 0 && in.d[1] >= 0 {
				r[int(in.d[1])*32+l] = b2u(ok)
			}
		}
	case opVote:
		var ballot uint32
		for mm := m; mm != 0; mm &= mm - 1 {
			l := bits.TrailingZeros32(mm)
			if (r[int(in.a[0])*32+l]&1 != 0) != (in.flags&flNegC != 0) {
				ballot |= 1 << l
			}
		}
		for mm := m; mm != 0; mm &= mm - 1 {
			l := bits.TrailingZeros32(mm)
			member := uint32(r[int(in.a[1])*32+l]) & m
			var v uint64
			switch in.sub {
			case voBallot:
				v = uint64(ballot & member)
			case voAll:
				v = b2u(ballot&member == member)
			case voAny:
				v = b2u(ballot&member != 0)
			case voUni:
				v = b2u(ballot&member == 0 || ballot&member == member)
			}
			if in.d[0] >= 0 {
				r[int(in.d[0])*32+l] = v
			}
		}
	}
}
