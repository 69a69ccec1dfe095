package pool

import (
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// state is where a block is in its life.
type state uint8

const (
	free    state = iota // cached and reusable by any stream
	pending              // freed on a stream whose event has not completed yet
	live                 // handed out
	parked               // freed on the default stream and kept for the same size (parked.go)
)

// segment is one allocation from the device, cut into blocks.
type segment struct {
	ptr   devarray.Ptr
	size  int64
	first *block // the block at ptr; blocks chain by address
	last  *block // the block at the end
	small bool   // it serves small requests only (smallRequest bytes or fewer)
}

// block is a range of a segment: live, pending or free. Neighbours in the
// segment are linked in address order so that free ones can merge.
type block struct {
	seg         *segment
	ptr         devarray.Ptr
	size        int64
	prev, next  *block
	state       state
	parkable    bool          // live: parkable(b) when it was handed out, so a free need not look at its segment
	stream      driver.Stream // live: the stream it was allocated on; pending: the stream that freed it
	fence       *fence        // pending: the event that marks the free
	nextParked  *block        // parked: the one parked before it (parked.go)
	left, right *block        // free: children in the free index's treap
	prio        uint64        // free: treap priority
}

// fence is the events recorded where blocks were freed, one per stream that
// must pass the free; several blocks share it when a pending block is split.
type fence struct {
	evs  []driver.Event
	refs int
	done bool
}

// freeIndex holds the free blocks ordered by size, then address, for best
// fit: a treap (a binary search tree kept balanced by random priorities,
// here a hash of the block's address) threaded through the blocks
// themselves, so inserting, removing and finding the best fit take
// O(log n) expected steps and allocate nothing. (A sorted slice, its
// predecessor, moved n/2 pointers on every insert and remove:
// BenchmarkFreeIndex compares the two.)
type freeIndex struct {
	root  *block
	n     int   // blocks
	bytes int64 // their bytes
}

// before reports whether a sorts before b: smaller, or as large and lower.
func before(a, b *block) bool {
	return a.size < b.size || a.size == b.size && a.ptr < b.ptr
}

// priority is a block's treap priority: its address, hashed (Fibonacci
// hashing spreads the 256-byte-aligned addresses over all 64 bits).
func priority(ptr devarray.Ptr) uint64 { return uint64(ptr) * 0x9e3779b97f4a7c15 }

func (x *freeIndex) insert(b *block) {
	b.left, b.right, b.prio = nil, nil, priority(b.ptr)
	x.root = treapInsert(x.root, b)
	x.n++
	x.bytes += b.size
}

func treapInsert(t, b *block) *block {
	if t == nil {
		return b
	}
	if b.prio > t.prio {
		b.left, b.right = treapSplit(t, b)
		return b
	}
	if before(b, t) {
		t.left = treapInsert(t.left, b)
	} else {
		t.right = treapInsert(t.right, b)
	}
	return t
}

// treapSplit splits t into the blocks before b and the others.
func treapSplit(t, b *block) (lo, hi *block) {
	if t == nil {
		return nil, nil
	}
	if before(t, b) {
		t.right, hi = treapSplit(t.right, b)
		return t, hi
	}
	lo, t.left = treapSplit(t.left, b)
	return lo, t
}

// treapMerge joins two treaps, every block of lo before every block of hi.
func treapMerge(lo, hi *block) *block {
	switch {
	case lo == nil:
		return hi
	case hi == nil:
		return lo
	case lo.prio > hi.prio:
		lo.right = treapMerge(lo.right, hi)
		return lo
	}
	hi.left = treapMerge(lo, hi.left)
	return hi
}

// remove takes b, which must be in the index, out of it.
func (x *freeIndex) remove(b *block) {
	link := &x.root
	for t := *link; t != nil && t != b; t = *link {
		if before(b, t) {
			link = &t.left
		} else {
			link = &t.right
		}
	}
	if *link != b {
		return // not in the index
	}
	*link = treapMerge(b.left, b.right)
	b.left, b.right = nil, nil
	x.n--
	x.bytes -= b.size
}

// bestFit returns the smallest free block of at least size bytes (the
// lowest address among equals), or nil.
func (x *freeIndex) bestFit(size int64) *block {
	var fit *block
	for t := x.root; t != nil; {
		if t.size >= size {
			fit, t = t, t.left
		} else {
			t = t.right
		}
	}
	return fit
}

// largest returns the size of the largest free block, 0 when there is none.
func (x *freeIndex) largest() int64 {
	t := x.root
	if t == nil {
		return 0
	}
	for t.right != nil {
		t = t.right
	}
	return t.size
}
