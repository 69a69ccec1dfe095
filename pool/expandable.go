package pool

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// ErrReservationFull: an expandable pool (Expandable) would have to map
// memory past the end of its address reservation. It comes wrapped in an
// *OutOfMemoryError, so errors.Is(err, accounting.ErrOutOfMemory) holds
// too; nothing was mapped for the request and nothing the pool held was
// lost.
var ErrReservationFull = errors.New("the expandable segment's address reservation is full")

// Expandable makes the pool grow by virtual memory, as PyTorch's
// expandable segments do: at its first allocation it reserves
// reserveBytes of device address space (rounded up to the device's
// recommended granularity; cuMemAddressReserve), and where another pool
// would allocate a new segment it maps more physical memory at the end of
// what it has mapped (cuMemCreate, cuMemMap, cuMemSetAccess, in chunks of
// the recommended granularity). Its memory is so one segment that grows in
// place: its address stays, nothing is copied, and no free space is left
// between segments; a free block at the end grows with it, so a block may
// span the old end and the new chunk.
//
// Trim unmaps and releases the chunks at the end that hold no block in
// use or pending (cuMemUnmap, cuMemRelease); Release does the same and,
// once nothing is mapped, frees the reservation. A request that would map
// past the reservation fails with an *OutOfMemoryError wrapping
// ErrReservationFull: the pool does not fall back to cuMemAlloc. The
// ledger counts the reservation under accounting.VirtualAddress and the
// chunks mapped under accounting.Physical, with the pool's cached bytes
// and its block log under Physical too. The reserve ratio
// (SetReserveRatio) does not apply: there are no whole segments to give
// back, only the free end, which Trim gives back.
//
// All requests share the one segment: small ones do not get segments of
// their own, and no block is parked (the fast path of small frees on the
// default stream is not taken).
func Expandable(reserveBytes int64) Option {
	return func(p *Pool) { p.exp = &expandable{dev: p.dev, want: reserveBytes} }
}

// expandable is the address reservation of an Expandable pool and the
// chunks mapped into it, from its start on.
type expandable struct {
	dev      driver.Device
	want     int64        // bytes of address space asked for
	base     devarray.Ptr // 0 while nothing is reserved
	reserved int64        // bytes reserved at base
	chunk    int64        // bytes of each chunk: the recommended granularity
	chunks   []driver.PhysicalHandle
	seg      *segment // the pool's segment over the mapped chunks; nil while none is
}

// mapped returns the bytes mapped from base on.
func (e *expandable) mapped() int64 { return int64(len(e.chunks)) * e.chunk }

// reserve reserves the address range unless it is reserved already.
func (e *expandable) reserve() error {
	if e.base != 0 {
		return nil
	}
	if e.want <= 0 {
		return fmt.Errorf("expandable reservation of %d bytes: %w", e.want, driver.ErrInvalidValue)
	}
	g, err := e.dev.MemGranularity()
	if err != nil {
		return err
	}
	chunk := roundUp(g.Recommended, g.Minimum)
	if e.want > (1<<62)-chunk {
		return fmt.Errorf("expandable reservation of %d bytes: %w", e.want, driver.ErrInvalidValue)
	}
	size := roundUp(e.want, chunk)
	base, err := e.dev.ReserveAddress(size, 0)
	if err != nil {
		return err
	}
	e.base, e.reserved, e.chunk = base, size, chunk
	return nil
}

func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// mapChunks maps n chunks after those mapped, accessible; a failure
// half-way unmaps and releases the ones it mapped.
func (e *expandable) mapChunks(n int) error {
	had := len(e.chunks)
	for range n {
		if err := e.mapChunk(); err != nil {
			return errors.Join(err, e.unmapFrom(had))
		}
	}
	return nil
}

// mapChunk creates a chunk and maps it, accessible, after the mapped ones.
func (e *expandable) mapChunk() error {
	h, err := driver.MapNew(e.dev, e.base+devarray.Ptr(e.mapped()), e.chunk)
	if err != nil {
		return err
	}
	e.chunks = append(e.chunks, h)
	return nil
}

// unmapFrom unmaps and releases the chunks from index i on, last first.
// A chunk that cannot be unmapped stays mapped, and so do those before
// it; the error says so.
func (e *expandable) unmapFrom(i int) error {
	for j := len(e.chunks) - 1; j >= i; j-- {
		at := e.base + devarray.Ptr(int64(j)*e.chunk)
		if err := e.dev.UnmapMemory(at, e.chunk); err != nil {
			return err
		}
		h := e.chunks[j]
		e.chunks = e.chunks[:j]
		if err := e.dev.ReleasePhysical(h); err != nil {
			return err
		}
	}
	return nil
}

// close frees the reservation once nothing is mapped in it (Release); a
// later allocation reserves again.
func (e *expandable) close() error {
	if e == nil || e.base == 0 || len(e.chunks) > 0 {
		return nil
	}
	err := e.dev.FreeAddress(e.base, e.reserved)
	e.base, e.reserved = 0, 0
	return err
}

// growInPlace maps chunks at the end of the expandable segment until its
// last block, when free, or a new one after it holds size bytes, and
// returns that block, out of the free index. The caller holds p.mu.
func (p *Pool) growInPlace(size int64) (*block, error) {
	e := p.exp
	if err := e.reserve(); err != nil {
		if errors.Is(err, accounting.ErrOutOfMemory) {
			return nil, p.outOfMemory(size, false, err)
		}
		return nil, fmt.Errorf("pool: alloc %d bytes: %w", size, p.noteFault(err))
	}
	seg := e.seg
	var tail *block // the free block at the end, which grows
	if seg != nil && seg.last.state == free {
		tail = seg.last
	}
	need := size
	if tail != nil {
		need -= tail.size
	}
	need = roundUp(need, e.chunk)
	if need > e.reserved-e.mapped() {
		return nil, p.outOfMemory(size, false, fmt.Errorf("%w: %s mapped of %s reserved, %s more needed",
			ErrReservationFull, accounting.FormatBytes(e.mapped()), accounting.FormatBytes(e.reserved), accounting.FormatBytes(need)))
	}
	before := e.mapped()
	err := e.mapChunks(int(need / e.chunk))
	var b *block
	if grown := e.mapped() - before; grown > 0 {
		b = p.extend(tail, grown)
	}
	if err != nil {
		if b != nil { // chunks that could not be unmapped again stay the segment's, free
			p.release(b)
		}
		if errors.Is(err, accounting.ErrOutOfMemory) {
			return nil, p.outOfMemory(size, false, err)
		}
		return nil, fmt.Errorf("pool: alloc %d bytes: %w", size, p.noteFault(err))
	}
	return b, nil
}

// extend adds n bytes just mapped to the end of the expandable segment,
// making it when there is none, and returns the block that holds them:
// tail (the free last block, or nil) grown, or a new block. It is out of
// the free index. The caller holds p.mu.
func (p *Pool) extend(tail *block, n int64) *block {
	e := p.exp
	seg := e.seg
	var b *block
	switch {
	case seg == nil:
		seg = &segment{ptr: e.base}
		seg.first = &block{seg: seg, ptr: e.base}
		seg.last = seg.first
		e.seg = seg
		p.segments[e.base] = seg
		p.led.NoteSegment(p.kind, uintptr(e.base))
		p.st.Segments++
		b = seg.first
	case tail != nil:
		p.free[class(false)].remove(tail)
		b = tail
	default:
		b = p.newBlock()
		*b = block{seg: seg, ptr: seg.ptr + devarray.Ptr(seg.size), prev: seg.last}
		seg.last.next = b
		seg.last = b
	}
	b.size += n
	seg.size += n
	p.st.Reserved += n
	p.st.PeakReserved = max(p.st.PeakReserved, p.st.Reserved)
	return b
}

// trimInPlace unmaps the chunks at the end of the expandable segment that
// its last block, free, covers whole, and returns the bytes unmapped.
// Once nothing is left mapped the segment goes. The caller holds p.mu.
func (p *Pool) trimInPlace() (int64, error) {
	e := p.exp
	seg := e.seg
	if seg == nil || seg.last.state != free {
		return 0, nil
	}
	tail := seg.last
	keep := roundUp(int64(tail.ptr-seg.ptr), e.chunk) // the bytes blocks before the tail reach into
	was := e.mapped()
	err := p.noteFault(e.unmapFrom(int(keep / e.chunk)))
	freed := was - e.mapped()
	if freed == 0 {
		return 0, err
	}
	index := &p.free[class(false)]
	index.remove(tail)
	tail.size -= freed
	seg.size -= freed
	p.st.Reserved -= freed
	switch {
	case tail.size > 0:
		index.insert(tail)
	case tail.prev != nil:
		tail.prev.next = nil
		seg.last = tail.prev
		p.spare = append(p.spare, tail)
	default: // nothing is mapped: the segment is gone
		delete(p.segments, seg.ptr)
		e.seg = nil
		p.st.Segments--
		p.st.Released++
	}
	return freed, err
}

// growExpandable is grow for an expandable pool: its segment grows in
// place (growInPlace). When the reservation or the device has no room and
// frees are pending, it waits for them, takes a cached block that now
// fits, or else tries once more (a block pending at the end may have
// become free, and grows). The caller holds p.mu.
func (p *Pool) growExpandable(size int64, s driver.Stream) (*block, error) {
	b, err := p.growInPlace(size)
	if errors.Is(err, accounting.ErrOutOfMemory) && len(p.pending) > 0 {
		p.st.OOMRetries++
		p.waitPending()
		if b = p.take(size, s, false); b != nil {
			p.st.FromCache++
			return b, nil
		}
		b, err = p.growInPlace(size)
	}
	if err != nil {
		return nil, err
	}
	p.st.FromDevice++
	return b, nil
}
