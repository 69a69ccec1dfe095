package sim

import (
	"slices"
)

// sliceArena is the arena as it was before spans.go, kept as the oracle
// of the property and fuzz tests and the peer of the benchmark: a free list
// and a live list, both slices sorted by offset, so a linear best-fit scan
// per alloc and O(n) inserts and deletes. Its behaviour is the contract
// the arena keeps.
type sliceArena struct {
	size int64
	free []span // sorted by offset, no two adjacent
	live []span // sorted by offset
	used int64
}

func newSliceArena(size int64) *sliceArena {
	return &sliceArena{size: size, free: []span{{0, size}}}
}

// alloc returns the offset of a free range of size bytes (size is already
// aligned), or false when no free range is large enough.
func (a *sliceArena) alloc(size int64) (int64, bool) {
	best := -1
	for i, f := range a.free {
		if f.size >= size && (best < 0 || f.size < a.free[best].size) {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	off := a.free[best].off
	if a.free[best].size == size {
		a.free = slices.Delete(a.free, best, best+1)
	} else {
		a.free[best].off += size
		a.free[best].size -= size
	}
	i, _ := slices.BinarySearchFunc(a.live, off, cmpOff)
	a.live = slices.Insert(a.live, i, span{off, size})
	a.used += size
	return off, true
}

func cmpOff(s span, off int64) int {
	switch {
	case s.off < off:
		return -1
	case s.off > off:
		return 1
	}
	return 0
}

// release frees the allocation that starts at off and returns its size, or
// false when no allocation starts there.
func (a *sliceArena) release(off int64) (int64, bool) {
	i, ok := slices.BinarySearchFunc(a.live, off, cmpOff)
	if !ok {
		return 0, false
	}
	s := a.live[i]
	a.live = slices.Delete(a.live, i, i+1)
	a.used -= s.size
	j, _ := slices.BinarySearchFunc(a.free, off, cmpOff)
	mergePrev := j > 0 && a.free[j-1].end() == s.off
	mergeNext := j < len(a.free) && s.end() == a.free[j].off
	switch {
	case mergePrev && mergeNext:
		a.free[j-1].size += s.size + a.free[j].size
		a.free = slices.Delete(a.free, j, j+1)
	case mergePrev:
		a.free[j-1].size += s.size
	case mergeNext:
		a.free[j].off = s.off
		a.free[j].size += s.size
	default:
		a.free = slices.Insert(a.free, j, s)
	}
	return s.size, true
}

// find returns the live allocation that holds all of [off, off+n).
func (a *sliceArena) find(off, n int64) (span, bool) {
	i, ok := slices.BinarySearchFunc(a.live, off, cmpOff)
	if !ok {
		i-- // the allocation starting before off, if any
	}
	if i < 0 || i >= len(a.live) {
		return span{}, false
	}
	s := a.live[i]
	if off < s.off || n < 0 || off+n > s.end() || off+n < off {
		return span{}, false
	}
	return s, true
}

// largestFree returns the size of the largest free range.
func (a *sliceArena) largestFree() int64 {
	var m int64
	for _, f := range a.free {
		m = max(m, f.size)
	}
	return m
}
