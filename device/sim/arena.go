package sim

// span is a range of the arena: offset and size in bytes.
type span struct{ off, size int64 }

func (s span) end() int64 { return s.off + s.size }

// arena hands out aligned ranges of one block of memory: best fit (the
// smallest free range that fits, the lowest offset among equals), with
// splitting from the front on allocation and coalescing of free neighbours
// on release. Its ranges, free and live, tile the block; two treaps index
// them (spans.go), so alloc, release and find are O(log n) expected in the
// number of ranges. It is not safe for concurrent use; the device's lock
// guards it (find only reads, so readers may share it).
type arena struct {
	size   int64
	used   int64
	byOff  *node // every range, by offset
	bySize *node // free ranges, by size then offset
	seq    uint64
	spare  []*node // released nodes, for reuse
	// live walks the live allocations in offset order, as
	// `for _, s := range a.live`; Close walks it and then drops it (sets
	// it to nil with used to 0), after which the arena is not used again.
	live func(yield func(int, span) bool)
}

func newArena(size int64) *arena {
	a := &arena{size: size}
	a.live = a.eachLive
	a.byOff = a.newNode(span{0, size}, true)
	a.bySize = a.byOff
	return a
}

func (a *arena) newNode(s span, free bool) *node {
	var n *node
	if k := len(a.spare); k > 0 {
		n, a.spare = a.spare[k-1], a.spare[:k-1]
		*n = node{}
	} else {
		n = new(node)
	}
	a.seq++
	n.span, n.free, n.prio = s, free, splitmix64(a.seq)
	return n
}

// alloc returns the offset of a free range of size bytes (size is already
// aligned and positive), or false when no free range is large enough.
func (a *arena) alloc(size int64) (int64, bool) {
	if size <= 0 {
		return 0, false
	}
	f := bestFit(a.bySize, size)
	if f == nil {
		return 0, false
	}
	treapRemove(bySize, &a.bySize, f)
	off := f.off
	if f.size == size {
		f.free = false
	} else {
		// Split from the front: f keeps the tail, its place in offset order unchanged.
		f.off += size
		f.size -= size
		a.bySize = treapInsert(bySize, a.bySize, f)
		a.byOff = treapInsert(byOff, a.byOff, a.newNode(span{off, size}, false))
	}
	a.used += size
	return off, true
}

// release frees the allocation that starts at off and returns its size, or
// false when no allocation starts there.
func (a *arena) release(off int64) (int64, bool) {
	n := floor(a.byOff, off, false)
	if n == nil || n.off != off || n.free {
		return 0, false
	}
	size := n.size
	a.used -= size
	if next := floor(a.byOff, n.end(), false); next != nil && next != n && next.free {
		treapRemove(bySize, &a.bySize, next)
		treapRemove(byOff, &a.byOff, next)
		n.size += next.size
		a.spare = append(a.spare, next)
	}
	if prev := floor(a.byOff, off, true); prev != nil && prev.free {
		treapRemove(bySize, &a.bySize, prev)
		treapRemove(byOff, &a.byOff, n)
		prev.size += n.size
		a.spare = append(a.spare, n)
		n = prev
	}
	n.free = true
	a.bySize = treapInsert(bySize, a.bySize, n)
	return size, true
}

// find returns the live allocation that holds all of [off, off+n).
func (a *arena) find(off, n int64) (span, bool) {
	s := floor(a.byOff, off, false)
	if s != nil && s.free {
		// Free ranges are coalesced: the range before is live, if any.
		s = floor(a.byOff, s.off, true)
	}
	if s == nil || off < s.off || n < 0 || off+n > s.end() || off+n < off {
		return span{}, false
	}
	return s.span, true
}

// largestFree returns the size of the largest free range.
func (a *arena) largestFree() int64 {
	x := a.bySize
	if x == nil {
		return 0
	}
	for x.kid[bySize][1] != nil {
		x = x.kid[bySize][1]
	}
	return x.size
}

// eachLive yields the live allocations in offset order.
func (a *arena) eachLive(yield func(int, span) bool) {
	i := 0
	walk(a.byOff, func(n *node) bool {
		if n.free {
			return true
		}
		i++
		return yield(i-1, n.span)
	})
}

// freeSpans returns the free ranges in offset order.
func (a *arena) freeSpans() []span {
	var fs []span
	walk(a.byOff, func(n *node) bool {
		if n.free {
			fs = append(fs, n.span)
		}
		return true
	})
	return fs
}
