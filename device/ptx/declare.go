package ptx

import (
	"fmt"
	"math/bits"
)

// ArrayAccess says what a launch declares its kernel does with an array.
type ArrayAccess uint8

// The accesses, as package kernel's In, Out and InOut, and Memory.
const (
	// ReadArray: the kernel reads the array (In).
	ReadArray ArrayAccess = iota + 1
	// WriteArray: the kernel writes the array without reading what was
	// there (Out): a read of bytes the launch has not written first is an
	// UnwrittenRead fault.
	WriteArray
	// ReadWriteArray: the kernel reads and writes the array (InOut).
	ReadWriteArray
	// RawMemory: memory no array describes (kernel.Memory): accesses
	// anywhere in its allocation pass the extent check.
	RawMemory
)

// Array is an array argument a launch declares: the bytes [Addr, Addr+N)
// it spans, from its lowest byte to its highest (a strided view's holes
// included), and what the kernel does with them. The allocation an array
// lies in is the arrays' alone: an access there outside every declared
// array is an OutsideExtent fault, unless RawMemory lies there too.
type Array struct {
	Addr, N uint64
	Access  ArrayAccess
	// Name says what the array is ("argument 2 (Out)"), for the report.
	Name string
}

// declArray is a declared array during a run; written marks, one bit a
// byte, the bytes of a WriteArray array the launch has written.
type declArray struct {
	lo, hi  uint64
	access  ArrayAccess
	name    string
	written []uint64
}

// declare sets up the launch's declared arrays.
func (x *exec) declare(arrays []Array) {
	x.arrays = make([]declArray, 0, len(arrays))
	for _, a := range arrays {
		if a.N == 0 || a.Addr+a.N < a.Addr {
			continue
		}
		d := declArray{lo: a.Addr, hi: a.Addr + a.N, access: a.Access, name: a.Name}
		if a.Access == WriteArray {
			d.written = make([]uint64, (a.N+63)/64)
		}
		x.arrays = append(x.arrays, d)
	}
}

// attach notes in e the declared arrays that lie in its allocation.
func (x *exec) attach(e *allocEntry) {
	end := e.base + uint64(len(e.mem))
	for i := range x.arrays {
		d := &x.arrays[i]
		if d.lo < e.base || d.lo >= end {
			continue
		}
		if d.access == RawMemory {
			e.raw = true
			continue
		}
		e.decl = append(e.decl, int32(i))
	}
	if e.raw {
		e.decl = e.decl[:0]
	}
}

// declared checks an access of n bytes at a, in e's allocation, against
// the arrays declared there: it must lie inside one, and a read of an
// Out array's bytes (one no In or InOut array declares too) must follow
// a write of them in this launch. A write marks an Out array's bytes
// written.
//
//go:norace
func (x *exec) declared(w *warp, l int, in *inst, e *allocEntry, a uint64, n int, write bool) *Fault {
	end := a + uint64(n)
	inside, readable, out := false, false, false
	for _, i := range e.decl {
		d := &x.arrays[i]
		if a < d.lo || end > d.hi {
			continue
		}
		inside = true
		if d.written == nil {
			readable = true
		} else {
			out = true
		}
	}
	if !inside {
		return x.outside(w, l, in, e, a, n, write)
	}
	if !out {
		return nil
	}
	if (!write || in.op == opAtom) && !readable {
		for _, i := range e.decl {
			d := &x.arrays[i]
			if d.written == nil || a < d.lo || end > d.hi {
				continue
			}
			if off, ok := unset(d.written, a-d.lo, n); !ok {
				f := x.fault(w, l, in, UnwrittenRead, spGlobal, a, n, write)
				f.Array = "in " + d.name
				f.Detail = fmt.Sprintf("the array is declared Out (written before it is read), and its byte %d has not been written by this launch", a-d.lo+off)
				return f
			}
		}
	}
	if write {
		for _, i := range e.decl {
			d := &x.arrays[i]
			if d.written != nil && a >= d.lo && end <= d.hi {
				mark(d.written, a-d.lo, n)
			}
		}
	}
	return nil
}

// outside is the fault of an access outside every array declared in e's
// allocation, naming the nearest.
//
//go:norace
func (x *exec) outside(w *warp, l int, in *inst, e *allocEntry, a uint64, n int, write bool) *Fault {
	f := x.fault(w, l, in, OutsideExtent, spGlobal, a, n, write)
	f.Array = x.arrayNear(a, n, e.decl)
	f.Detail = fmt.Sprintf("the allocation %#x of %d bytes holds the launch's declared arrays, and the kernel is held to them", e.base, len(e.mem))
	return f
}

// arrayNear names the declared array that holds an access of n bytes at
// a, or the nearest, with how far outside it the access lies; among
// arrays idx (nil: all).
//
//go:norace
func (x *exec) arrayNear(a uint64, n int, idx []int32) string {
	end := a + uint64(n)
	var near *declArray
	var dist uint64
	m := len(x.arrays)
	if idx != nil {
		m = len(idx)
	}
	for j := 0; j < m; j++ {
		d := &x.arrays[j]
		if idx != nil {
			d = &x.arrays[idx[j]]
		}
		var g uint64
		switch {
		case end > d.hi:
			g = end - d.hi
		case a < d.lo:
			g = d.lo - a
		}
		if near == nil || g < dist {
			near, dist = d, g
		}
	}
	switch {
	case near == nil:
		return ""
	case dist == 0:
		return "in " + near.name
	case end > near.hi:
		return fmt.Sprintf("nearest declared array %s at %#x of %d bytes, %d bytes past its end", near.name, near.lo, near.hi-near.lo, dist)
	}
	return fmt.Sprintf("nearest declared array %s at %#x of %d bytes, %d bytes before its start", near.name, near.lo, near.hi-near.lo, dist)
}

// unset returns the offset, from off, of the first of n bits from bit off
// that is not set, and false; or true when all are set.
//
//go:norace
func unset(m []uint64, off uint64, n int) (uint64, bool) {
	for i := uint64(0); i < uint64(n); {
		b := off + i
		word, bit := b/64, b%64
		k := min(uint64(n)-i, 64-bit)
		want := ^uint64(0) >> (64 - k) << bit
		if got := m[word] & want; got != want {
			return i + uint64(bits.TrailingZeros64(^got&want)) - bit, false
		}
		i += k
	}
	return 0, true
}

// mark sets n bits from bit off.
//
//go:norace
func mark(m []uint64, off uint64, n int) {
	for i := uint64(0); i < uint64(n); {
		b := off + i
		word, bit := b/64, b%64
		k := min(uint64(n)-i, 64-bit)
		m[word] |= ^uint64(0) >> (64 - k) << bit
		i += k
	}
}
