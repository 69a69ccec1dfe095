package pool

// Small blocks freed on the default stream are parked, not merged: a
// default-stream allocation of the same size takes the last one parked
// back without splitting a block or searching the free index, which is
// what a loop that allocates and frees the same small buffers does. Parked
// blocks count as cached; they merge back into the free index (unpark)
// before the pool would ask the device for more, gives memory back, or
// reports its Stats, so they never make the pool grow or fragment.

// parkMax is the largest block parked, and parkClasses the number of sizes
// parked: one per 256-byte granule up to parkMax.
const (
	parkMax     = 64 << 10
	parkClasses = parkMax / 256
)

// parking holds the parked blocks, a stack per size.
type parking struct {
	stacks [parkClasses][]*block
	n      int // blocks parked
}

// parkable reports whether a block of size bytes in a small segment, freed
// with nothing to wait for, may be parked.
func parkable(b *block) bool {
	return b.seg.small && b.size <= parkMax && b.stream == nil
}

// park parks b, just freed on the default stream.
func (p *Pool) park(b *block) {
	b.state, b.stream, b.fence = parked, nil, nil
	k := b.size/256 - 1
	p.parked.stacks[k] = append(p.parked.stacks[k], b)
	p.parked.n++
}

// unparkOne returns the block last parked of exactly size bytes, or nil.
func (p *Pool) unparkOne(size int64) *block {
	if size > parkMax || p.parked.n == 0 {
		return nil
	}
	k := size/256 - 1
	s := p.parked.stacks[k]
	if len(s) == 0 {
		return nil
	}
	b := s[len(s)-1]
	s[len(s)-1] = nil
	p.parked.stacks[k] = s[:len(s)-1]
	p.parked.n--
	return b
}

// unpark merges every parked block back into the free index.
func (p *Pool) unpark() {
	if p.parked.n == 0 {
		return
	}
	for k, s := range p.parked.stacks {
		for i, b := range s {
			s[i] = nil
			p.release(b)
		}
		p.parked.stacks[k] = s[:0]
	}
	p.parked.n = 0
}
