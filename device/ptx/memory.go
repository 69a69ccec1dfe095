package ptx

import (
	"encoding/binary"
	"math/bits"
)

// memOp runs ld, st, atom and red on lanes m.
//
//go:norace
func (x *exec) memOp(w *warp, in *inst, m uint32) error {
	r := w.r
	size := in.t.size()
	n := size * max(int(in.nd), int(in.na), 1)
	if in.op == opAtom {
		n = size
	}
	write := in.op == opSt
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		a := uint64(in.off)
		if in.ab >= 0 {
			a += r[int(in.ab)*32+l]
		}
		b, f := x.access(w, l, in, a, n, write || in.op == opAtom)
		if f != nil {
			return f
		}
		switch in.op {
		case opLd:
			for i := 0; i < int(in.nd); i++ {
				v := load(b[i*size:], size)
				if in.d[i] >= 0 {
					r[int(in.d[i])*32+l] = in.t.ext(v)
				}
			}
		case opSt:
			for i := 0; i < int(in.na); i++ {
				store(b[i*size:], size, r[int(in.a[i])*32+l])
			}
		case opAtom:
			old := load(b, size)
			v := r[int(in.a[0])*32+l]
			var c uint64
			if in.na > 1 {
				c = r[int(in.a[1])*32+l]
			}
			if in.sub == atAdd && in.t == tF32 {
				// "atom.add.f32 on global memory flushes subnormal inputs
				// and results to sign-preserving zero; whereas atom.add.f32
				// on shared memory ... doesn't" (red.add.f32 alike)
				shared := in.sp == spShared || in.sp == spGeneric && a-sharedWindow < windowSize
				store(b, size, atomAddF32(old, v, !shared))
			} else {
				store(b, size, atomic(in, old, v, c))
			}
			if in.d[0] >= 0 {
				r[int(in.d[0])*32+l] = in.t.ext(old)
			}
		}
	}
	return nil
}

//go:norace
func load(b []byte, n int) uint64 {
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

//go:norace
func store(b []byte, n int, v uint64) {
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// atomAddF32 is atom.add.f32 and red.add.f32: the sum rounded to nearest
// even, its inputs and result flushed to zeros of their sign when flush
// (global memory).
//
//go:norace
func atomAddF32(old, v uint64, flush bool) uint64 {
	x, y := f32of(old), f32of(v)
	if flush {
		return bitsOf32(flush32(flush32(x) + flush32(y)))
	}
	return bitsOf32(x + y)
}

// atomic returns the new value of an atomic operation.
//
//go:norace
func atomic(in *inst, old, v, c uint64) uint64 {
	t := in.t
	switch in.sub {
	case atAdd:
		switch t {
		case tF32:
			return atomAddF32(old, v, false)
		case tF64:
			return bitsOf64(f64of(old) + f64of(v))
		}
		return t.trunc(old + v)
	case atExch:
		return t.trunc(v)
	case atCas:
		if t.trunc(old) == t.trunc(v) {
			return t.trunc(c)
		}
		return old
	case atAnd:
		return old & v
	case atOr:
		return t.trunc(old | v)
	case atXor:
		return t.trunc(old ^ v)
	case atMin, atMax:
		less := t.trunc(v) < t.trunc(old)
		if t.signed() {
			less = sx(t, v) < sx(t, old)
		}
		if less == (in.sub == atMin) {
			return t.trunc(v)
		}
		return old
	case atInc:
		if t.trunc(old) >= t.trunc(v) {
			return 0
		}
		return t.trunc(old + 1)
	case atDec:
		if t.trunc(old) == 0 || t.trunc(old) > t.trunc(v) {
			return t.trunc(v)
		}
		return t.trunc(old - 1)
	}
	return old
}

// access checks an access of n bytes at address a, in in's state space,
// and returns the bytes.
//
//go:norace
func (x *exec) access(w *warp, l int, in *inst, a uint64, n int, write bool) ([]byte, *Fault) {
	sp := in.sp
	if sp == spGeneric {
		switch {
		case a-sharedWindow < windowSize:
			sp, a = spShared, a-sharedWindow
		case a-localWindow < windowSize:
			sp, a = spLocal, a-localWindow
		case a-paramWindow < windowSize:
			sp, a = spKParam, a-paramWindow
		default:
			sp = spGlobal
		}
	} else if sp == spKParam && in.ab >= 0 {
		// .param through a register: a kernel parameter's or a .func
		// parameter's address, as mov of the parameter's name gave it
		switch {
		case a-paramWindow < windowSize:
			a -= paramWindow
		case a-frameWindow < windowSize:
			sp, a = spParam, a-frameWindow
		}
	}
	align := uint64(n)
	if in.op == opLd || in.op == opSt {
		// a vector access is aligned to its whole size
		align = uint64(n)
	}
	if align&(align-1) != 0 {
		align = uint64(in.t.size())
	}
	if a%align != 0 {
		f := x.fault(w, l, in, MisalignedAddress, sp, a, n, write)
		return nil, f
	}
	switch sp {
	case spGlobal, spConst:
		return x.global(w, l, in, a, n, write)
	case spShared:
		if a > uint64(len(x.shared)) || uint64(len(x.shared))-a < uint64(n) {
			f := x.fault(w, l, in, IllegalAddress, sp, a, n, write)
			f.HasAlloc, f.AllocBase, f.AllocSize = true, 0, len(x.shared)
			f.Past = int64(a) + int64(n) - int64(len(x.shared))
			return nil, f
		}
		if x.race != nil && in.flags&flRaceExempt == 0 {
			if f := x.race.check(x, w, l, in, int(a), n, write); f != nil {
				return nil, f
			}
		}
		return x.shared[a : a+uint64(n)], nil
	case spLocal:
		lb := uint64(x.p.localBytes)
		if a > lb || lb-a < uint64(n) {
			f := x.fault(w, l, in, IllegalAddress, sp, a, n, write)
			f.HasAlloc, f.AllocSize, f.Past = true, int(lb), int64(a)+int64(n)-int64(lb)
			return nil, f
		}
		base := uint64(l) * lb
		return w.local[base+a : base+a+uint64(n)], nil
	case spParam:
		fb := uint64(x.p.frameBytes)
		if a > fb || fb-a < uint64(n) {
			return nil, x.fault(w, l, in, IllegalAddress, sp, a, n, write)
		}
		base := uint64(l) * fb
		return w.frame[base+a : base+a+uint64(n)], nil
	case spKParam:
		pb := uint64(len(x.l.Params))
		if a > pb || pb-a < uint64(n) || write {
			return nil, x.fault(w, l, in, IllegalAddress, sp, a, n, write)
		}
		return x.l.Params[a : a+uint64(n)], nil
	}
	return nil, x.fault(w, l, in, IllegalAddress, sp, a, n, write)
}

//go:norace
func (x *exec) fault(w *warp, l int, in *inst, kind FaultKind, sp space, a uint64, n int, write bool) *Fault {
	f := &Fault{Kind: kind, Kernel: x.k.Name, Line: int(in.line), Thread: x.thread(w, l),
		Space: sp.String(), Addr: a, Size: n, Write: write}
	if len(x.arrays) != 0 && (sp == spGlobal || sp == spConst) {
		f.Array = x.arrayNear(a, n, nil)
	}
	return f
}

// global returns global memory at a, checked against the live allocations.
//
//go:norace
func (x *exec) global(w *warp, l int, in *inst, a uint64, n int, write bool) ([]byte, *Fault) {
	e := x.last
	if !(a-e.base < uint64(len(e.mem))) {
		e = nil
		for i := range x.cache {
			c := &x.cache[i]
			if c.ok && a-c.base < uint64(len(c.mem)) {
				e = c
				break
			}
		}
	}
	if e == nil {
		base, mem, ok := x.lookup(a)
		if !ok {
			f := x.fault(w, l, in, IllegalAddress, spGlobal, a, n, write)
			x.nearest(f, a)
			return nil, f
		}
		e = &x.cache[x.cNext]
		x.cNext = (x.cNext + 1) % len(x.cache)
		x.flushEntry(e)
		*e = allocEntry{base: base, mem: mem, ok: true}
		if len(x.arrays) != 0 {
			x.attach(e)
		}
		if x.marker != nil {
			e.pages, e.shift = x.marker.PageMarks(base)
		}
	}
	x.last = e
	off := a - e.base
	if uint64(len(e.mem))-off < uint64(n) {
		f := x.fault(w, l, in, IllegalAddress, spGlobal, a, n, write)
		f.HasAlloc, f.AllocBase, f.AllocSize = true, e.base, len(e.mem)
		f.Past = int64(off) + int64(n) - int64(len(e.mem))
		return nil, f
	}
	if len(x.l.Watches) != 0 {
		if f := x.watched(w, l, in, a, n, write); f != nil {
			return nil, f
		}
	}
	if len(e.decl) != 0 {
		if f := x.declared(w, l, in, e, a, n, write); f != nil {
			return nil, f
		}
	}
	if e.pages != nil {
		e.markPages(off, n, write, in.op == opAtom)
	}
	if write {
		e.wr += int64(n)
		if in.op == opAtom {
			e.rd += int64(n)
		}
	} else {
		e.rd += int64(n)
	}
	return e.mem[off : off+uint64(n)], nil
}

// watched returns the fault of an access of n bytes at a that touches one
// of the launch's watches, or nil.
//
//go:norace
func (x *exec) watched(w *warp, l int, in *inst, a uint64, n int, write bool) *Fault {
	for i := range x.l.Watches {
		wt := &x.l.Watches[i]
		if (write || wt.Reads) && a < wt.Addr+wt.N && wt.Addr < a+uint64(n) {
			f := x.fault(w, l, in, wt.Kind, spGlobal, a, n, write)
			f.Detail = wt.Name
			if wt.Kind == ReadOnlyWrite {
				f.Detail = wt.Name + " is declared read-only"
				if f.Array == "in "+wt.Name {
					f.Detail = "the array is declared read-only"
				}
			}
			return f
		}
	}
	return nil
}

//go:norace
func (x *exec) lookup(a uint64) (uint64, []byte, bool) {
	if base, mem, ok := x.k.mod.Lookup(a); ok {
		return base, mem, true
	}
	if x.l.Global == nil {
		return 0, nil, false
	}
	base, mem, ok := x.l.Global.Lookup(a)
	if ok && (a < base || a-base >= uint64(len(mem))) && !(a == base && len(mem) == 0) {
		return 0, nil, false
	}
	return base, mem, ok
}

// nearest names the allocation nearest below a, probing back up to 1 MiB.
//
//go:norace
func (x *exec) nearest(f *Fault, a uint64) {
	for d := uint64(1); d <= 1<<20 && d <= a; d *= 2 {
		if base, mem, ok := x.lookup(a - d); ok {
			f.HasAlloc, f.AllocBase, f.AllocSize = true, base, len(mem)
			f.Past = int64(a+uint64(f.Size)) - int64(base) - int64(len(mem))
			return
		}
	}
}

// flushCache adds the cached allocations' byte counts to the stats.
//
//go:norace
func (x *exec) flushCache() {
	for i := range x.cache {
		x.flushEntry(&x.cache[i])
	}
}

//go:norace
func (x *exec) flushEntry(e *allocEntry) {
	if e.ok {
		if e.rd != 0 {
			x.st.Read[e.base] += e.rd
		}
		if e.wr != 0 {
			x.st.Written[e.base] += e.wr
		}
	}
	e.rd, e.wr = 0, 0
}
