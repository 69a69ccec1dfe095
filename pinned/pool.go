package pinned

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// minClass is the smallest size class: one page.
const minClass = 4096

// classSteps is the number of size classes per doubling of size above
// 8 pages: a request is rounded up by at most an eighth of the power of
// two below it, so at most 12.5 % is wasted (PyTorch's host allocator
// rounds to the next power of two: a 20 GiB request pins 32 GiB).
const classSteps = 8

// SizeClass returns the bytes a Pool allocates for a request of n bytes:
// n rounded up to a whole page up to 32 KiB, and above that to a multiple
// of an eighth of the largest power of two not above n. 20 GiB stays
// 20 GiB; 17 GiB becomes 18 GiB. A size within an eighth of the largest
// int64 has no class: SizeClass returns -1 (a Pool refuses it).
func SizeClass(n int64) int64 {
	if n <= minClass {
		return minClass
	}
	step := int64(minClass)
	if n > minClass*classSteps {
		step = int64(1) << (63 - bits.LeadingZeros64(uint64(n))) / classSteps
	}
	if n > math.MaxInt64-(step-1) {
		return -1
	}
	return (n + step - 1) / step * step
}

// Pool caches page-locked buffers of one kind (one set of flags) on one
// device, as PyCUDA's and CuPy's pinned memory pools do: a freed buffer
// is kept in its size class and handed out again to a request of the same
// class, but only once every async copy that used it has finished (each
// copy's event, through Guard). The ledger counts the pool's memory under
// its kind, with what the pool holds unused shown as cached. A Pool is
// safe for concurrent use.
//
// The device's Close frees the pool's memory with the rest of the device's:
// the pool is closed by it, and Alloc, Trim and Close return errors
// wrapping ErrClosed from then on; it never hands out a cached block of a
// closed device. The methods of a nil or zero Pool return ErrNil.
//
// Once the pool sees the device's sticky error (driver.ErrContextFailed:
// device work faulted and the context is unusable), from a call of the
// device or from the async work of a cached block, Alloc fails with it
// from then on, cached blocks included; Trim and Close still free what
// the device lets them, and the device's Close frees the rest.
type Pool struct {
	dev   driver.Device
	flags Flags
	kind  accounting.Kind

	mu     sync.Mutex
	idle   map[int64][]idleBlock // by size class
	st     PoolStats
	closed bool
	gone   bool  // the device was closed while the pool was open
	failed error // the first error wrapping driver.ErrContextFailed the pool saw (noteFault)
}

// idleBlock is cached memory and the async work that may still use it.
type idleBlock struct {
	mem     *driver.HostMem
	pending []Pending
}

// PoolStats are a pool's figures at one moment.
type PoolStats struct {
	InUse      int64 // bytes of the size classes handed out
	Requested  int64 // bytes asked for by the buffers handed out
	Cached     int64 // bytes held but not handed out
	PeakInUse  int64 // highest InUse
	Allocs     int64 // buffers handed out
	FromCache  int64 // of them, served from the cache
	FromDriver int64 // of them, newly allocated
	Live       int   // buffers handed out and not yet freed
	Waiting    int   // cached blocks whose last async copy has not finished
	Retries    int64 // times the driver ran out and the cache was freed to retry
}

// NewPool returns a pool of page-locked buffers with the given flags on dev.
func NewPool(dev driver.Device, flags Flags) (*Pool, error) {
	if dev == nil || flags&^(Portable|Mapped|WriteCombined) != 0 {
		return nil, fmt.Errorf("pinned: new pool with flags %v: want a device and known flags: %w", flags, driver.ErrInvalidValue)
	}
	if deviceClosed(dev) {
		return nil, fmt.Errorf("pinned: new pool: %w", ErrClosed)
	}
	if flags&Mapped != 0 && !dev.Info().CanMapHost {
		return nil, fmt.Errorf("pinned: new pool with flag Mapped on %v (context flags %q): %w", dev.DeviceID(), dev.Info().ContextFlags, ErrNotMapped)
	}
	return &Pool{dev: dev, flags: flags, kind: flags.LedgerKind(), idle: make(map[int64][]idleBlock)}, nil
}

// Alloc returns a buffer of n bytes: a cached one of n's size class whose
// async copies have finished, else a new one. When the driver is out of
// memory, the pool frees its idle cache and tries once more.
func (p *Pool) Alloc(n int64) (*Buffer, error) {
	if err := p.valid(); err != nil {
		return nil, fmt.Errorf("pinned: pool alloc: %w", err)
	}
	class := SizeClass(n)
	if n <= 0 || class < 0 {
		return nil, fmt.Errorf("pinned: pool alloc %d bytes: want a positive size with a size class: %w", n, driver.ErrInvalidValue)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deviceGone() {
		return nil, fmt.Errorf("pinned: pool alloc: the pool's device was closed: %w", ErrClosed)
	}
	if p.closed {
		return nil, fmt.Errorf("pinned: pool alloc: %w", driver.ErrClosed)
	}
	if p.failed != nil {
		return nil, fmt.Errorf("pinned: pool alloc %d bytes: the device failed earlier: %w", n, p.failed)
	}
	mem := p.reuse(class)
	if p.failed != nil { // the async work of a cached block reported the fault
		if mem != nil {
			p.idle[class] = append(p.idle[class], idleBlock{mem: mem})
		}
		return nil, fmt.Errorf("pinned: pool alloc %d bytes: the device failed: %w", n, p.failed)
	}
	if mem != nil {
		p.st.FromCache++
		p.st.Cached -= class
		p.dev.Ledger().AddCached(p.kind, -class)
	} else {
		var err error
		mem, err = p.dev.HostAlloc(class, p.flags)
		if errors.Is(err, accounting.ErrOutOfMemory) && p.st.Cached > 0 {
			p.st.Retries++
			p.trim()
			mem, err = p.dev.HostAlloc(class, p.flags)
		}
		if err != nil {
			p.noteFault(err)
			return nil, fmt.Errorf("pinned: pool alloc %d bytes (class %d, %v): %w", n, class, p.flags, err)
		}
		p.st.FromDriver++
	}
	p.st.Allocs++
	p.st.Live++
	p.st.InUse += class
	p.st.Requested += n
	p.st.PeakInUse = max(p.st.PeakInUse, p.st.InUse)
	return &Buffer{dev: p.dev, mem: mem, n: n, pool: p}, nil
}

// reuse takes a cached block of the class whose async work has finished.
// The errors of that work are the work's own (its Op reports them), not
// the pool's: a block whose copy failed is as reusable as any other.
func (p *Pool) reuse(class int64) *driver.HostMem {
	blocks := p.idle[class]
	for i := range blocks {
		left, err := settle(blocks[i].pending)
		p.noteFault(err)
		blocks[i].pending = left
		if len(left) == 0 {
			mem := blocks[i].mem
			p.idle[class] = append(blocks[:i], blocks[i+1:]...)
			return mem
		}
	}
	return nil
}

// valid returns ErrNil for a nil Pool or one not made by NewPool.
func (p *Pool) valid() error {
	if p == nil || p.dev == nil || p.idle == nil {
		return ErrNil
	}
	return nil
}

// deviceGone reports whether the pool's device was closed while the pool
// was open. The first time, it closes the pool and drops its cache, which
// the device's Close freed, from the ledger's cached bytes. The caller
// holds p.mu.
func (p *Pool) deviceGone() bool {
	if p.gone {
		return true
	}
	if p.closed || !deviceClosed(p.dev) {
		return false
	}
	for class, blocks := range p.idle {
		p.dev.Ledger().AddCached(p.kind, -class*int64(len(blocks)))
	}
	clear(p.idle)
	p.st.Cached = 0
	p.closed, p.gone = true, true
	return true
}

// put takes back the memory of a freed buffer with the async work that may
// still use it.
func (p *Pool) put(mem *driver.HostMem, n int64, pending []Pending) {
	class := int64(len(mem.Bytes))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.InUse -= class
	p.st.Requested -= n
	p.st.Live--
	if p.deviceGone() {
		return // the device's Close freed it
	}
	if p.closed {
		_ = p.dev.HostFree(mem) // a buffer outlived its pool's Close: give it back now (the device's Close does, if this fails)
		return
	}
	p.idle[class] = append(p.idle[class], idleBlock{mem: mem, pending: pending})
	p.st.Cached += class
	p.dev.Ledger().AddCached(p.kind, class)
}

// Stats returns the pool's figures (zero for a nil or zero Pool).
func (p *Pool) Stats() PoolStats {
	if p.valid() != nil {
		return PoolStats{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deviceGone()
	s := p.st
	for _, blocks := range p.idle {
		for _, b := range blocks {
			if left, _ := settle(b.pending); len(left) > 0 {
				s.Waiting++
			}
		}
	}
	return s
}

// Trim frees every cached block whose async copies have finished and
// returns the bytes freed.
func (p *Pool) Trim() (int64, error) {
	if err := p.valid(); err != nil {
		return 0, fmt.Errorf("pinned: pool trim: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deviceGone() {
		return 0, fmt.Errorf("pinned: pool trim: the pool's device was closed: %w", ErrClosed)
	}
	return p.trim()
}

// trim frees the idle blocks that no async work uses any more; the errors
// of that work are its own, as in reuse. The caller holds p.mu.
func (p *Pool) trim() (int64, error) {
	var freed int64
	var errs []error
	for class, blocks := range p.idle {
		keep := blocks[:0]
		for _, b := range blocks {
			left, err := settle(b.pending)
			p.noteFault(err)
			if b.pending = left; len(left) > 0 {
				keep = append(keep, b)
				continue
			}
			// A block the device fails to free leaves the cache all the
			// same (after a sticky error the device's Close frees it):
			// kept, it would be freed again, or handed out, later.
			if err := p.dev.HostFree(b.mem); err != nil {
				errs = append(errs, p.noteFault(err))
			} else {
				freed += class
			}
			p.st.Cached -= class
			p.dev.Ledger().AddCached(p.kind, -class)
		}
		p.idle[class] = keep
	}
	return freed, errors.Join(errs...)
}

// Close waits for the async copies of the cached blocks, frees them all and
// closes the pool. While buffers are still handed out it returns ErrInUse
// and changes nothing: free them first. Close is idempotent; once the
// device was closed first, it returns an error wrapping ErrClosed, every
// time, and frees nothing (the device's Close did).
func (p *Pool) Close() error {
	if err := p.valid(); err != nil {
		return fmt.Errorf("pinned: close pool: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deviceGone() {
		return fmt.Errorf("pinned: close pool: the pool's device was closed first: %w", ErrClosed)
	}
	if p.closed {
		return nil
	}
	if p.st.Live > 0 {
		return fmt.Errorf("pinned: close pool: %s in %d buffers still handed out: %w",
			accounting.FormatBytes(p.st.InUse), p.st.Live, ErrInUse)
	}
	var errs []error
	for _, blocks := range p.idle {
		for _, b := range blocks {
			for _, w := range b.pending {
				if err := w.Wait(); err != nil {
					errs = append(errs, p.noteFault(err))
				}
			}
			b.pending = nil
		}
	}
	_, err := p.trim()
	p.closed = true
	return errors.Join(append(errs, err)...)
}

// noteFault remembers err when it is the device's sticky error
// (driver.ErrContextFailed): from then on Alloc fails with it. It returns
// err. The caller holds p.mu.
func (p *Pool) noteFault(err error) error {
	if p.failed == nil && err != nil && errors.Is(err, driver.ErrContextFailed) {
		p.failed = err
	}
	return err
}
