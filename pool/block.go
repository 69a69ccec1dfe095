package pool

import (
	"cmp"
	"slices"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// state is where a block is in its life.
type state uint8

const (
	free    state = iota // cached and reusable by any stream
	pending              // freed on a stream whose event has not completed yet
	live                 // handed out
)

// segment is one allocation from the device, cut into blocks.
type segment struct {
	ptr   devarray.Ptr
	size  int64
	first *block // the block at ptr; blocks chain by address
	small bool   // it serves small requests only (smallRequest bytes or fewer)
}

// block is a range of a segment: live, pending or free. Neighbours in the
// segment are linked in address order so that free ones can merge.
type block struct {
	seg        *segment
	ptr        devarray.Ptr
	size       int64
	prev, next *block
	state      state
	stream     driver.Stream // live: the stream it was allocated on; pending: the stream that freed it
	fence      *fence        // pending: the event that marks the free
}

func (b *block) end() devarray.Ptr { return b.ptr + devarray.Ptr(b.size) }

// fence is the events recorded where blocks were freed, one per stream that
// must pass the free; several blocks share it when a pending block is split.
type fence struct {
	evs  []driver.Event
	refs int
	done bool
}

// freeIndex holds the free blocks sorted by size, then address, for best fit.
type freeIndex []*block

func cmpBlocks(a, b *block) int {
	if c := cmp.Compare(a.size, b.size); c != 0 {
		return c
	}
	return cmp.Compare(a.ptr, b.ptr)
}

func (x *freeIndex) insert(b *block) {
	i, _ := slices.BinarySearchFunc(*x, b, cmpBlocks)
	*x = slices.Insert(*x, i, b)
}

func (x *freeIndex) remove(b *block) {
	if i, ok := slices.BinarySearchFunc(*x, b, cmpBlocks); ok {
		*x = slices.Delete(*x, i, i+1)
	}
}

// bestFit returns the smallest free block of at least size bytes (the
// lowest address among equals), or nil.
func (x freeIndex) bestFit(size int64) *block {
	i, _ := slices.BinarySearchFunc(x, size, func(b *block, size int64) int { return cmp.Compare(b.size, size) })
	if i == len(x) {
		return nil
	}
	return x[i]
}

// largest returns the size of the largest free block, 0 when there is none.
func (x freeIndex) largest() int64 {
	if len(x) == 0 {
		return 0
	}
	return x[len(x)-1].size
}
