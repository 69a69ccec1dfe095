package pool

// Small blocks freed on the default stream are parked, not merged: a
// default-stream allocation of the same size takes the last one parked
// back without splitting a block or searching the free index, which is
// what a loop that allocates and frees the same small buffers does. Parked
// blocks count as cached; they merge back into the free index (unpark)
// before the pool would ask the device for more, gives memory back, or
// reports its Stats, so they never make the pool grow or fragment.
//
// This is the pool's fast path (AllocAsync and FreeAsync): a parked block
// stays in the table of live blocks, marked parked, so that parking it and
// handing it out again touch no table, index or split; each takes the
// pool's lock once, without a defer, and does the bookkeeping of any
// allocation or free: the Stats, the ledger's cached bytes (one atomic
// add) and the recording's block notes (one atomic load while none is
// open). It reads the device's closed flag in place (driver.ClosedFlag).
// On sim (2 cores) that is about 15 ns an alloc+free pair, of which the
// four atomic operations of the two locks and the two of the ledger are
// about half (docs/perf.md, "The pool").

// parkMax is the largest block parked, and parkClasses the number of sizes
// parked: one per 256-byte granule up to parkMax.
const (
	parkMax     = 64 << 10
	parkClasses = parkMax / 256
)

// parking holds the parked blocks: a stack per size, linked through the
// blocks themselves (block.nextParked).
type parking struct {
	tops [parkClasses]*block
	n    int // blocks parked
}

// parkable reports whether b, live, may be parked when it is freed on
// the default stream: a block of at most parkMax bytes in a small
// segment, allocated on the default stream. Blocks keep the answer from
// when they were handed out (block.parkable).
func parkable(b *block) bool {
	return b.seg.small && b.size <= parkMax && b.stream == nil
}

// park puts b, its free counted, on the stack of its size. b stays in
// the table of live blocks, its state parked, so that handing it out again
// touches no table.
func (p *Pool) park(b *block) {
	b.state = parked
	top := &p.parked.tops[b.size>>8-1]
	b.nextParked, *top = *top, b
	p.parked.n++
}

// unparkOne returns the block last parked of exactly size bytes, or nil.
func (p *Pool) unparkOne(size int64) *block {
	if size > parkMax || p.parked.n == 0 {
		return nil
	}
	top := &p.parked.tops[size>>8-1]
	b := *top
	if b == nil {
		return nil
	}
	*top, b.nextParked = b.nextParked, nil
	p.parked.n--
	return b
}

// unpark merges every parked block back into the free index.
func (p *Pool) unpark() {
	if p.parked.n == 0 {
		return
	}
	for k, b := range p.parked.tops {
		for b != nil {
			next := b.nextParked
			b.nextParked = nil
			p.live.remove(b.ptr)
			p.release(b)
			b = next
		}
		p.parked.tops[k] = nil
	}
	p.parked.n = 0
}
