package pool

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Segment sizes, after PyTorch's caching allocator: small requests share
// 2 MiB segments, medium ones 20 MiB segments, large ones get their own
// segment rounded up to 2 MiB. Small requests are served only from small
// segments and larger ones only from the others, so a small block never
// pins a large segment that the device could otherwise have back.
const (
	smallRequest = 1 << 20
	smallSegment = 2 << 20
	largeRequest = 10 << 20
	largeSegment = 20 << 20
	segmentRound = 2 << 20
)

// Pool is a caching allocator of one device's memory. It is safe for
// concurrent use. The zero Pool is not usable; call New. The methods of a
// nil or zero Pool, or of one without a device, return ErrNil.
//
// Once a call of the device made by the pool fails with
// driver.ErrContextFailed (a sticky error: device work faulted and the
// context is unusable), every allocation fails with that error, cached
// blocks included: memory the device can no longer work on is not handed
// out, and no allocation retries the device. Frees, Trim and Release
// still work as far as the device lets them; the device's Close frees
// what they could not give back.
type Pool struct {
	dev        driver.Device
	closedFlag driver.ClosedFlag          // dev's closed flag, when it has one to read in place
	closer     interface{ Closed() bool } // else dev, when it can say it was closed
	led        *accounting.Ledger         // dev's ledger
	src        segmentSource              // where segments come from (source.go)
	kind       accounting.Kind            // the ledger kind of src's memory
	exp        *expandable                // Expandable: the one segment grows in place (expandable.go); src is not used

	mu          sync.Mutex
	segments    map[devarray.Ptr]*segment
	live        liveTable    // the blocks handed out and the parked ones, by address
	free        [2]freeIndex // the free blocks of large (0) and small (1) segments
	pending     []*block
	events      []driver.Event // idle events, for reuse
	spare       []*block       // block structs merged away, for reuse by split
	parked      parking        // small blocks freed on the default stream (parked.go)
	liveBlocks  int            // blocks handed out (live also holds the parked ones)
	limit       int64
	ratio       float64 // SetReserveRatio; 0: off
	st          Stats
	cachedShown int64 // the cached bytes last added to the ledger
	failed      error // the first error wrapping driver.ErrContextFailed a device call returned (noteFault)
}

// New returns an empty pool that allocates from dev: its segments come
// from the device's own allocator (cuMemAlloc on CUDA) unless an option
// (FromMemPool) says otherwise.
func New(dev driver.Device, opts ...Option) *Pool {
	p := &Pool{dev: dev, segments: make(map[devarray.Ptr]*segment), ratio: DefaultReserveRatio}
	p.src = deviceSource{dev}
	for _, o := range opts {
		o(p)
	}
	p.kind = p.src.kind()
	if p.exp != nil {
		p.kind = accounting.Physical
	}
	if dev != nil {
		if f, ok := dev.(interface{ ClosedFlag() driver.ClosedFlag }); ok && f.ClosedFlag().Valid() {
			p.closedFlag = f.ClosedFlag()
		} else {
			p.closer, _ = dev.(interface{ Closed() bool })
		}
		p.led = dev.Ledger()
	}
	return p
}

// Device returns the device the pool allocates from.
func (p *Pool) Device() driver.Device {
	if p == nil {
		return nil
	}
	return p.dev
}

// valid returns ErrNil for a nil Pool, a zero one, or one without a device.
func (p *Pool) valid() error {
	if p == nil || p.dev == nil || p.segments == nil {
		return ErrNil
	}
	return nil
}

// SetLimit sets the most bytes the pool may hand out at once; 0 removes the
// limit. Cached free memory does not count against it.
func (p *Pool) SetLimit(bytes int64) error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pool: set limit: %w", err)
	}
	if bytes < 0 {
		return fmt.Errorf("pool: limit %d bytes: %w", bytes, driver.ErrInvalidValue)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = bytes
	return nil
}

// DefaultReserveRatio is the reserve ratio of a new pool (SetReserveRatio).
const DefaultReserveRatio = 1.25

// SetReserveRatio bounds what the pool holds from the device by what it
// hands out: before it asks the device for a new segment, it gives back
// wholly free cached segments, largest first, as long as holding the new
// one would take the bytes reserved past ratio times the most bytes ever
// in use at once (this request included). Allocations served from the
// cache are not affected, and nothing is given back when only segments
// with blocks in use or pending are left, so the bound is kept as far as
// whole free segments allow. ratio 0 turns it off: the cache then only
// shrinks on Trim, Release or when the device runs out (PyTorch's and
// RMM's default); otherwise ratio must be at least 1. New pools start at
// DefaultReserveRatio.
func (p *Pool) SetReserveRatio(ratio float64) error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pool: set reserve ratio: %w", err)
	}
	if ratio != 0 && !(ratio >= 1 && ratio <= math.MaxFloat64) {
		return fmt.Errorf("pool: reserve ratio %v: want 0 or at least 1: %w", ratio, driver.ErrInvalidValue)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ratio = ratio
	return nil
}

// Alloc returns n bytes (rounded up to 256) for use on the default stream.
func (p *Pool) Alloc(n int64) (devarray.Ptr, error) { return p.AllocAsync(n, nil) }

// AllocAsync returns n bytes (rounded up to 256) for work on stream s (nil:
// the default stream). It may reuse a block freed on s whose free the
// stream has not reached yet, since s runs in order.
func (p *Pool) AllocAsync(n int64, s driver.Stream) (devarray.Ptr, error) {
	if s == nil && n >= 0 && n <= parkMax && p.valid() == nil && p.open() {
		// The fast path: the block last parked of this size (parked.go),
		// handed out with no table, index or split touched.
		size := accounting.AllocBytes(n)
		p.mu.Lock()
		if p.failed == nil && (p.limit == 0 || size <= p.limit-p.st.InUse) {
			if len(p.pending) > 0 { // poll is a call
				p.poll()
				if p.failed != nil { // its query saw the device's fault: fail with it
					return p.allocLocked(n, size, s)
				}
			}
			if b := p.unparkOne(size); b != nil {
				b.state = live
				p.liveBlocks++
				if p.led.Recording() != nil { // an inlined load: NoteBlockAlloc is a call
					p.led.NoteBlockAlloc(p.kind, uintptr(b.ptr), n, 0)
				}
				p.st.Allocs++
				p.st.FromCache++
				p.st.InUse += size
				p.st.PeakInUse = max(p.st.PeakInUse, p.st.InUse)
				p.cachedShown -= size // publishCached, knowing the change
				p.led.AddCached(p.kind, -size)
				p.mu.Unlock()
				return b.ptr, nil
			}
		}
		return p.allocLocked(n, size, s)
	}
	return p.allocChecked(n, s)
}

// allocChecked is AllocAsync for the requests its fast path does not take:
// it checks the pool and the request, locks p.mu and calls allocLocked.
// (Out of AllocAsync, its error paths do not weigh on the fast path.)
func (p *Pool) allocChecked(n int64, s driver.Stream) (devarray.Ptr, error) {
	if err := p.valid(); err != nil {
		return 0, fmt.Errorf("pool: alloc: %w", err)
	}
	size := accounting.AllocBytes(n)
	if n < 0 {
		return 0, fmt.Errorf("pool: alloc %d bytes: %w", n, driver.ErrInvalidValue)
	}
	if size < 0 { // within a granule of 2^63: more than any device has
		p.mu.Lock()
		defer p.mu.Unlock()
		return 0, p.outOfMemory(n, false, accounting.ErrOutOfMemory)
	}
	if p.closed() {
		// its cached blocks went with the device's memory
		return 0, fmt.Errorf("pool: alloc %d bytes on %v: %w", n, p.dev.DeviceID(), driver.ErrClosed)
	}
	p.mu.Lock()
	return p.allocLocked(n, size, s)
}

// closed reports whether the pool's device says it was closed.
func (p *Pool) closed() bool {
	return p.closedFlag.Closed() || p.closer != nil && p.closer.Closed()
}

// open reports, for the fast paths, that the device has a closed flag
// (or none at all) and is not closed: the flag is read in place, where
// closed, with its call through an interface, cannot be inlined. A device
// that only answers Closed takes the other paths.
func (p *Pool) open() bool { return p.closer == nil && !p.closedFlag.Closed() }

// allocLocked is AllocAsync past its fast path, for a request of n bytes
// rounded up to size. The caller holds p.mu; allocLocked unlocks it.
func (p *Pool) allocLocked(n, size int64, s driver.Stream) (devarray.Ptr, error) {
	defer p.mu.Unlock()
	if p.failed != nil {
		return 0, fmt.Errorf("pool: alloc %d bytes: the device failed earlier: %w", n, p.failed)
	}
	if p.limit > 0 && size > p.limit-p.st.InUse {
		return 0, p.outOfMemory(size, true, nil)
	}
	p.poll()
	if p.failed != nil { // the poll's query saw the device's fault
		return 0, fmt.Errorf("pool: alloc %d bytes: the device failed: %w", n, p.failed)
	}
	// AllocAsync's fast path has looked for a parked block of this size.
	b := p.take(size, s, p.picky())
	if b == nil && p.parked.n > 0 && size <= smallRequest { // parked blocks are in small segments only
		p.unpark()
		b = p.take(size, s, p.picky())
	}
	if b != nil {
		p.st.FromCache++
	} else {
		var err error
		if b, err = p.grow(size, s); err != nil {
			// grow may have given segments back (keepRatio) before it
			// failed; the fast path updates the ledger by differences only
			p.publishCached()
			return 0, err
		}
	}
	p.split(b, size)
	if b.fence != nil {
		p.unfence(b)
	}
	b.state, b.stream = live, s
	b.parkable = parkable(b)
	p.led.NoteBlockAlloc(p.kind, uintptr(b.ptr), n, streamHandle(s))
	p.live.put(b)
	p.liveBlocks++
	p.st.Allocs++
	p.st.InUse += size
	p.st.PeakInUse = max(p.st.PeakInUse, p.st.InUse)
	p.publishCached()
	return b.ptr, nil
}

// Free returns memory from Alloc or AllocAsync to the cache. Memory
// allocated on a stream is reused by other streams only after that stream
// has passed this point; the stream itself may reuse it at once.
func (p *Pool) Free(ptr devarray.Ptr) error { return p.FreeAsync(ptr, nil) }

// FreeAsync returns memory whose last use was enqueued on stream s (nil:
// only the stream it was allocated on). It is reused by other streams only
// after both s and the allocating stream have passed this point, as
// PyTorch's record_stream does; a block on the default stream alone is
// reusable at once. The pool knows a stream by its Stream value: one
// value must name one stream, so a wrapper of CUDA's per-thread default
// stream (handle 2, a different stream on each OS thread) must be used
// from its own thread only, one wrapper per thread, as libcuarray's
// allocator keeps them.
func (p *Pool) FreeAsync(ptr devarray.Ptr, s driver.Stream) error {
	if p.valid() != nil {
		return p.freeInvalid(ptr)
	}
	p.mu.Lock()
	b := p.live.get(ptr)
	if b != nil && b.state == live && b.parkable && s == nil && p.open() {
		// The fast path: the default stream alone, so reusable at once:
		// parked (parked.go), staying in the table, its state parked.
		p.liveBlocks--
		if p.led.Recording() != nil { // an inlined load: NoteBlockFree is a call
			p.led.NoteBlockFree(p.kind, uintptr(ptr), b.size, 0)
		}
		p.st.Frees++
		p.st.InUse -= b.size
		p.cachedShown += b.size // publishCached, knowing the change
		p.led.AddCached(p.kind, b.size)
		p.park(b)
		p.mu.Unlock()
		return nil
	}
	return p.freeLocked(ptr, b, s)
}

// FreeSynced is FreeAsync for a block whose work on every stream but s is
// known to be complete (the caller synchronized the device): the stream it
// was allocated on is not touched, so that stream may already be
// destroyed, as a foreign library's stream may be by the time its
// allocation is freed (CuPy destroys a stream while blocks allocated on it
// live on; recording an event on it killed the process on an H100). With
// s nil the block is reusable at once.
func (p *Pool) FreeSynced(ptr devarray.Ptr, s driver.Stream) error {
	if p.valid() != nil {
		return p.freeInvalid(ptr)
	}
	p.mu.Lock()
	b := p.live.get(ptr)
	if b != nil && b.state == live {
		b.stream = nil
	}
	return p.freeLocked(ptr, b, s)
}

// freeInvalid is FreeAsync's error on an invalid pool (out of line).
func (p *Pool) freeInvalid(ptr devarray.Ptr) error {
	return fmt.Errorf("pool: free %v: %w", ptr, p.valid())
}

// freeLocked is FreeAsync past its fast path: b is the table's entry for
// ptr, or nil. The caller holds p.mu; freeLocked unlocks it.
func (p *Pool) freeLocked(ptr devarray.Ptr, b *block, s driver.Stream) error {
	defer p.mu.Unlock()
	if b == nil || b.state != live { // parked blocks stay in the table (parked.go)
		return fmt.Errorf("pool: free %v: %w", ptr, ErrNotAllocated)
	}
	p.live.remove(ptr)
	p.liveBlocks--
	p.led.NoteBlockFree(p.kind, uintptr(ptr), b.size, streamHandle(s))
	p.st.Frees++
	p.st.InUse -= b.size
	p.publishCached()
	if b.stream == nil && s == nil { // the default stream alone: reusable at once
		p.release(b)
		return nil
	}
	streams := make([]driver.Stream, 0, 2)
	for _, st := range []driver.Stream{b.stream, s} {
		if st != nil && !slices.Contains(streams, st) {
			streams = append(streams, st)
		}
	}
	f, err := p.record(streams)
	if err != nil {
		// The events could not be recorded: wait for the streams instead.
		for _, st := range streams {
			err = errors.Join(err, p.noteFault(st.Synchronize()))
		}
		p.release(b) // the memory is the pool's again either way
		return fmt.Errorf("pool: free %v: %w", ptr, err)
	}
	b.state, b.fence, b.stream = pending, f, nil
	if len(streams) == 1 {
		b.stream = streams[0] // that stream alone may reuse it before its event
	}
	f.refs++
	p.pending = append(p.pending, b)
	return nil
}

// record records an event on each of streams.
func (p *Pool) record(streams []driver.Stream) (*fence, error) {
	f := &fence{}
	for _, s := range streams {
		var ev driver.Event
		if n := len(p.events); n > 0 {
			ev, p.events = p.events[n-1], p.events[:n-1]
		} else {
			var err error
			if ev, err = p.dev.NewEvent(); err != nil {
				p.events = append(p.events, f.evs...)
				return nil, p.noteFault(err)
			}
		}
		f.evs = append(f.evs, ev)
		if err := s.Record(ev); err != nil {
			p.events = append(p.events, f.evs...)
			return nil, p.noteFault(err)
		}
	}
	return f, nil
}

// poll moves pending blocks whose events have completed to the free index.
// It stops at the first block whose event has not (as PyTorch's caching
// allocator does): blocks are pending in the order they were freed, so an
// allocation costs one event query while the streams are busy, not one per
// pending block. A block behind a slower stream's waits for the next poll.
func (p *Pool) poll() {
	if len(p.pending) == 0 {
		return
	}
	p.settle(true, func(f *fence) bool {
		for _, ev := range f.evs {
			// A failed query counts as done: the stream reports its own
			// error (after a fault, nothing queued behind it runs).
			ok, err := ev.Query()
			if err != nil {
				p.noteFault(err)
			} else if !ok {
				return false
			}
		}
		return true
	})
}

// settle frees the pending blocks whose fence done says is complete; with
// stop, it asks done about no fence after the first that is not.
func (p *Pool) settle(stop bool, done func(*fence) bool) {
	keep := p.pending[:0]
	stopped := false
	for _, b := range p.pending {
		if !b.fence.done && !stopped && done(b.fence) {
			b.fence.done = true
		}
		if !b.fence.done {
			stopped = stop
		}
		if b.fence.done {
			p.unfence(b)
			p.release(b)
		} else {
			keep = append(keep, b)
		}
	}
	clear(p.pending[len(keep):])
	p.pending = keep
}

// unfence drops b's reference to its fence, recycling the events at the last.
func (p *Pool) unfence(b *block) {
	f := b.fence
	b.fence = nil
	if f.refs--; f.refs == 0 {
		p.events = append(p.events, f.evs...)
	}
}

// take finds a cached block of at least size bytes for stream s: the best
// fit among the free blocks and the pending blocks freed on s itself (s
// runs in order, so it may reuse them before it passes their free). With
// picky, a large request leaves whole segments much larger than itself
// alone (see keepsWhole).
func (p *Pool) take(size int64, s driver.Stream, picky bool) *block {
	small := size <= smallRequest && p.exp == nil // an expandable pool's one segment serves all
	fit := p.free[class(small)].bestFit(size)
	if fit != nil && picky && keepsWhole(fit, size) {
		fit = nil
	}
	own := -1
	if s != nil {
		for i, b := range p.pending {
			if b.stream == s && b.seg.small == small && b.size >= size && !(picky && keepsWhole(b, size)) &&
				(own < 0 || b.size < p.pending[own].size) {
				own = i
			}
		}
	}
	if own >= 0 && (fit == nil || p.pending[own].size < fit.size) {
		b := p.pending[own]
		p.pending = slices.Delete(p.pending, own, own+1)
		return b
	}
	if fit != nil {
		p.free[class(small)].remove(fit)
	}
	return fit
}

// picky reports whether take leaves whole segments much larger than a
// request alone (keepsWhole), for the reserve ratio to give back: not in
// an expandable pool, whose one segment Trim gives back from its end.
func (p *Pool) picky() bool { return p.ratio > 0 && p.exp == nil }

// keepsWhole reports whether a request of size bytes should leave the
// cached block b alone: b is a whole segment (nothing of it in use) and
// more than half as large again as a large request (more than 10 MiB) that
// would split it. Splitting would pin the segment with a block much smaller
// than it, where the reserve ratio (SetReserveRatio) can give a whole
// segment back to the device; a segment of the request's own size is
// taken instead. Free space in segments already cut up is used as ever.
// On the mixed trace (trace_test.go) this and the ratio together keep peak
// reserved within 1.25 times peak in use; without it, 1.3 to 1.4.
func keepsWhole(b *block, size int64) bool {
	return size > largeRequest && b == b.seg.first && b.size == b.seg.size && b.size-size > max(segmentRound, size/2)
}

// class is the index into Pool.free of the blocks of small or large segments.
func class(small bool) int {
	if small {
		return 1
	}
	return 0
}

// split cuts b down to size bytes. The rest stays what b was: free, or
// pending on b's fence, since the stream that freed b may not have passed
// the free yet. b must already be out of the free index and pending list.
func (p *Pool) split(b *block, size int64) {
	if b.size-size < accounting.Granularity {
		return
	}
	rest := p.newBlock()
	*rest = block{seg: b.seg, ptr: b.ptr + devarray.Ptr(size), size: b.size - size, prev: b, next: b.next}
	if b.next != nil {
		b.next.prev = rest
	}
	b.next = rest
	if rest.next == nil {
		b.seg.last = rest
	}
	b.size = size
	if b.fence == nil {
		b.state = live // keeps rest from merging back into b
		p.release(rest)
		return
	}
	rest.state, rest.stream, rest.fence = pending, b.stream, b.fence
	b.fence.refs++
	p.pending = append(p.pending, rest)
}

// newBlock returns a spare block struct, or a new one.
func (p *Pool) newBlock() *block {
	if n := len(p.spare); n > 0 {
		b := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return b
	}
	return new(block)
}

// release makes b free and merges it with free neighbours.
func (p *Pool) release(b *block) {
	b.state, b.stream, b.fence = free, nil, nil
	index := &p.free[class(b.seg.small)]
	if n := b.next; n != nil && n.state == free {
		index.remove(n)
		p.absorb(b, n)
	}
	if q := b.prev; q != nil && q.state == free {
		index.remove(q)
		p.absorb(q, b)
		b = q
	}
	index.insert(b)
}

// absorb merges right, the block just after left, into left.
func (p *Pool) absorb(left, right *block) {
	left.size += right.size
	left.next = right.next
	if right.next != nil {
		right.next.prev = left
	} else {
		left.seg.last = left
	}
	p.spare = append(p.spare, right)
}

// segmentSize is how much to ask the device for to serve size bytes.
func segmentSize(size int64) int64 {
	switch {
	case size <= smallRequest:
		return smallSegment
	case size <= largeRequest:
		return largeSegment
	}
	return roundSegment(size)
}

// roundSegment rounds size up to whole segmentRound units.
func roundSegment(size int64) int64 {
	if size > math.MaxInt64-segmentRound {
		return size // no room to round up; the device refuses it anyway
	}
	return (size + segmentRound - 1) / segmentRound * segmentRound
}

// keepRatio gives wholly free segments back to the device, largest first,
// while a new segment for a request of size bytes would take the bytes
// reserved past the reserve ratio times the peak in use (SetReserveRatio).
// A segment the device fails to free stays cached (Trim and Release report
// such errors).
//
// It reports whether a segment of want bytes now stays within the ratio.
func (p *Pool) keepRatio(size, want int64) bool {
	if p.ratio == 0 {
		return true
	}
	bound := p.ratio * float64(max(p.st.PeakInUse, p.st.InUse+size))
	over := func() bool { return float64(p.st.Reserved)+float64(want) > bound }
	if !over() {
		return true
	}
	p.unpark() // a small segment of parked blocks alone is idle too
	var idle []*segment
	for _, seg := range p.segments {
		if b := seg.first; b.state == free && b.size == seg.size {
			idle = append(idle, seg)
		}
	}
	slices.SortFunc(idle, func(a, b *segment) int { return cmp.Compare(b.size, a.size) })
	for _, seg := range idle {
		if !over() {
			return true
		}
		_ = p.releaseSegment(seg)
	}
	return !over()
}

// releaseSegment gives seg, wholly free, back to the device.
func (p *Pool) releaseSegment(seg *segment) error {
	if err := p.src.free(seg.ptr); err != nil {
		return p.noteFault(err)
	}
	p.free[class(seg.small)].remove(seg.first)
	delete(p.segments, seg.ptr)
	p.st.Reserved -= seg.size
	p.st.Segments--
	p.st.Released++
	return nil
}

// grow allocates a segment for a block of size bytes for stream s and
// returns its one block, counted FromDevice. When the device is out of
// memory it asks for exactly size; then it takes any cached block that fits
// (even a whole segment keepsWhole would leave), counted FromCache; then
// it frees the cache and tries once more.
func (p *Pool) grow(size int64, s driver.Stream) (*block, error) {
	if p.exp != nil {
		return p.growExpandable(size, s)
	}
	want := segmentSize(size)
	if !p.keepRatio(size, want) && size > smallRequest {
		want = roundSegment(size) // a medium request's 20 MiB segment would pass the ratio: its own size
	}
	seg, err := p.mallocSegment(size, want, s)
	if errors.Is(err, accounting.ErrOutOfMemory) {
		if b := p.take(size, s, false); b != nil {
			p.st.FromCache++
			return b, nil
		}
		p.st.OOMRetries++
		p.trim(true)
		p.noteFault(p.src.reclaim())
		seg, err = p.mallocSegment(size, want, s)
	}
	if errors.Is(err, accounting.ErrOutOfMemory) {
		return nil, p.outOfMemory(size, false, err)
	}
	if err != nil {
		return nil, fmt.Errorf("pool: alloc %d bytes: %w", size, err)
	}
	p.st.FromDevice++
	return seg.first, nil
}

// mallocSegment allocates a segment of want bytes for a request of size
// on stream s, or of size bytes when the device has no room for want.
func (p *Pool) mallocSegment(size, want int64, s driver.Stream) (*segment, error) {
	ptr, on, err := p.src.malloc(want, s)
	if errors.Is(err, accounting.ErrOutOfMemory) && want > size {
		want = size
		ptr, on, err = p.src.malloc(want, s)
	}
	if err != nil {
		return nil, p.noteFault(err)
	}
	seg := &segment{ptr: ptr, size: want, small: size <= smallRequest}
	seg.first = &block{seg: seg, ptr: ptr, size: want}
	seg.last = seg.first
	if on != nil {
		if err := p.fenceSegment(seg.first, on); err != nil {
			return nil, errors.Join(err, p.noteFault(p.src.free(ptr)))
		}
	}
	p.segments[ptr] = seg
	p.led.NoteSegment(p.kind, uintptr(ptr))
	p.st.Reserved += want
	p.st.PeakReserved = max(p.st.PeakReserved, p.st.Reserved)
	p.st.Segments++
	return seg, nil
}

// fenceSegment makes b, the one block of a segment just allocated in the
// order of stream on, pending on an event recorded on on after the
// allocation: on may use it at once, other streams once the event
// completes, as for a block freed on on. When the event cannot be
// recorded, it waits for on instead.
func (p *Pool) fenceSegment(b *block, on driver.Stream) error {
	f, err := p.record([]driver.Stream{on})
	if err != nil {
		return p.noteFault(on.Synchronize())
	}
	b.state, b.stream, b.fence = pending, on, f
	f.refs++
	return nil
}

// trim gives every wholly free segment back to the device; with wait, it
// first waits for the pending blocks' events. It returns the bytes freed
// and the first error of the device's frees.
func (p *Pool) trim(wait bool) (int64, error) {
	p.unpark()
	if wait {
		p.waitPending()
	} else {
		p.poll()
	}
	if p.exp != nil {
		freed, err := p.trimInPlace()
		p.publishCached()
		return freed, err
	}
	var freed int64
	var errs []error
	for _, seg := range p.segments {
		if b := seg.first; b.state != free || b.size != seg.size {
			continue
		}
		if err := p.releaseSegment(seg); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += seg.size
	}
	p.publishCached()
	return freed, errors.Join(errs...)
}

// waitPending waits for the events of every pending block and frees the
// blocks. The caller holds p.mu.
func (p *Pool) waitPending() {
	p.settle(false, func(f *fence) bool {
		for _, ev := range f.evs {
			p.noteFault(ev.Synchronize())
		}
		return true
	})
}

// publishCached brings the ledger's count of cached device bytes up to
// date with the pool's: 0 once the device is closed, whose Close freed the
// segments. The caller holds p.mu.
func (p *Pool) publishCached() {
	c := p.st.Reserved - p.st.InUse
	if p.closed() {
		c = 0
	}
	p.led.AddCached(p.kind, c-p.cachedShown)
	p.cachedShown = c
}

// Trim gives the cached segments that are wholly free back to the device,
// without waiting for streams, and returns the bytes freed.
func (p *Pool) Trim() (int64, error) {
	if err := p.valid(); err != nil {
		return 0, fmt.Errorf("pool: trim: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trim(false)
}

// Release waits for every pending free, gives all cached memory back to the
// device and closes the pool's events. Blocks still allocated keep their
// segments; Release then reports them with ErrInUse.
func (p *Pool) Release() error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pool: release: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.trim(true)
	for _, ev := range p.events {
		err = errors.Join(err, ev.Close())
	}
	p.events = nil
	err = errors.Join(err, p.src.close(), p.noteFault(p.exp.close()))
	if n := p.liveBlocks; n > 0 {
		err = errors.Join(err, fmt.Errorf("pool: release: %d blocks, %s, still allocated: %w",
			n, accounting.FormatBytes(p.st.InUse), ErrInUse))
	}
	return err
}

// outOfMemory builds the error for a request of size bytes.
func (p *Pool) outOfMemory(size int64, byLimit bool, devErr error) error {
	e := &OutOfMemoryError{Requested: size, Free: -1, Total: -1, Limit: p.limit,
		InUse: p.st.InUse, Cached: p.st.Reserved - p.st.InUse, ByLimit: byLimit, Err: devErr, LargestFree: -1}
	var dev *accounting.OutOfMemoryError
	if errors.As(devErr, &dev) && !byLimit && dev.DeviceTotal >= 0 && dev.DeviceLargestFree > 0 {
		// the device's figures when it refused, which tell its largest free block too
		e.Free, e.Total, e.LargestFree = dev.DeviceFree, dev.DeviceTotal, dev.DeviceLargestFree
		return e
	}
	if free, total, err := p.dev.MemInfo(); err == nil {
		e.Free, e.Total = free, total
	} else {
		p.noteFault(err)
	}
	return e
}

// noteFault remembers err when it is the device's sticky error
// (driver.ErrContextFailed): from then on every allocation fails with it.
// It returns err. The caller holds p.mu.
func (p *Pool) noteFault(err error) error {
	if p.failed == nil && err != nil && errors.Is(err, driver.ErrContextFailed) {
		p.failed = err
	}
	return err
}

// streamHandle is s's handle for a recording, 0 for the default stream.
func streamHandle(s driver.Stream) uintptr {
	if s == nil {
		return 0
	}
	return s.Handle()
}
