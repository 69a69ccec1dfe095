package ptx

import "math/bits"

// match.sync and redux.sync: warp-synchronous like shfl.sync and
// vote.sync, they wait (in runWarp) for the non-exited lanes of their
// member mask, and the lanes that execute them take part.

// match and redux modes
const (
	maAny uint8 = iota
	maAll
	rxAdd
	rxMin
	rxMax
	rxAnd
	rxOr
	rxXor
)

// decodeMatch decodes match.any.sync.type d, a, membermask and
// match.all.sync.type d[|p], a, membermask.
func (b *builder) decodeMatch(ri rawInst, in inst, m mods) (inst, error) {
	switch {
	case !m.other["sync"]:
		return in, errf(ri.line, "%s: match needs .sync", ri.opcode)
	case m.other["any"] && !m.other["all"]:
		in.sub = maAny
	case m.other["all"] && !m.other["any"]:
		in.sub = maAll
	default:
		return in, errf(ri.line, "%s: match needs .any or .all", ri.opcode)
	}
	if len(m.types) != 1 || (in.t != tB32 && in.t != tB64) {
		return in, errf(ri.line, "%s: match takes .b32 or .b64", ri.opcode)
	}
	if err := b.nops(ri, 3); err != nil {
		return in, err
	}
	if ri.ops[0].kind == roPair && in.sub != maAll {
		return in, errf(ri.line, "%s: only match.all has a predicate destination", ri.opcode)
	}
	if err := b.checkRegSizes(ri, []typ{tB32, in.t, tB32}, false); err != nil {
		return in, err
	}
	in.op = opMatch
	return in, b.syncOperands(ri, &in, true, in.t, tB32)
}

// decodeRedux decodes redux.sync.op.type dst, src, membermask.
func (b *builder) decodeRedux(ri rawInst, in inst, m mods, parts []string) (inst, error) {
	if !m.other["sync"] {
		return in, errf(ri.line, "%s: redux needs .sync", ri.opcode)
	}
	ops := map[string]uint8{"add": rxAdd, "min": rxMin, "max": rxMax, "and": rxAnd, "or": rxOr, "xor": rxXor}
	n := 0
	for _, p := range parts[1:] {
		if k, ok := ops[p]; ok {
			in.sub = k
			n++
		}
	}
	if n != 1 || len(m.types) != 1 {
		return in, errf(ri.line, "%s: redux needs one operation and one type", ri.opcode)
	}
	switch in.sub {
	case rxAdd, rxMin, rxMax:
		if in.t != tU32 && in.t != tS32 {
			return in, errf(ri.line, "%s: redux.sync.add, .min and .max take .u32 or .s32 (.f32 is not supported)", ri.opcode)
		}
	default:
		if in.t != tB32 {
			return in, errf(ri.line, "%s: redux.sync.and, .or and .xor take .b32", ri.opcode)
		}
	}
	if err := b.nops(ri, 3); err != nil {
		return in, err
	}
	if err := b.checkRegSizes(ri, []typ{in.t, in.t, tB32}, false); err != nil {
		return in, err
	}
	in.op = opRedux
	return in, b.syncOperands(ri, &in, false, in.t, tB32)
}

// matchRedux runs match.sync and redux.sync on lanes m, all of whose
// member lanes that have not exited are among m. Each lane's group is its
// member mask's lanes that execute the instruction.
//
//go:norace
func (x *exec) matchRedux(w *warp, in *inst, m uint32) {
	r := w.r
	src := r[int(in.a[0])*32 : int(in.a[0])*32+32]
	for mm := m; mm != 0; mm &= mm - 1 {
		l := bits.TrailingZeros32(mm)
		group := uint32(r[int(in.a[1])*32+l]) & m
		var v uint64
		var p bool
		switch in.op {
		case opMatch:
			v, p = matchGroup(in, src, group, l)
		case opRedux:
			v = reduxGroup(in, src, group)
		}
		if in.d[0] >= 0 {
			r[int(in.d[0])*32+l] = v
		}
		if in.flags&flPair != 0 && in.d[1] >= 0 {
			r[int(in.d[1])*32+l] = b2u(p)
		}
	}
}

// matchGroup is match.sync for lane l: .any gives the lanes of group whose
// value equals l's; .all gives group and true when every lane of group has
// the same value, else 0 and false.
//
//go:norace
func matchGroup(in *inst, src []uint64, group uint32, l int) (uint64, bool) {
	t := in.t
	mine := t.trunc(src[l])
	var same uint32
	for g := group; g != 0; g &= g - 1 {
		j := bits.TrailingZeros32(g)
		if t.trunc(src[j]) == mine {
			same |= 1 << j
		}
	}
	if in.sub == maAny {
		return uint64(same), false
	}
	if same == group {
		return uint64(group), true
	}
	return 0, false
}

// reduxGroup is redux.sync's reduction of the 32-bit values of group's
// lanes (.add truncated to 32 bits).
//
//go:norace
func reduxGroup(in *inst, src []uint64, group uint32) uint64 {
	signed := in.t == tS32
	var acc uint32
	first := true
	for g := group; g != 0; g &= g - 1 {
		v := uint32(src[bits.TrailingZeros32(g)])
		if first {
			acc, first = v, false
			continue
		}
		switch in.sub {
		case rxAdd:
			acc += v
		case rxMin:
			if signed && int32(v) < int32(acc) || !signed && v < acc {
				acc = v
			}
		case rxMax:
			if signed && int32(v) > int32(acc) || !signed && v > acc {
				acc = v
			}
		case rxAnd:
			acc &= v
		case rxOr:
			acc |= v
		case rxXor:
			acc ^= v
		}
	}
	return uint64(acc)
}
