package sim

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Stream-ordered memory pools (cuMemAllocAsync, cuMemFreeAsync, the
// cuMemPool functions), on sim's own memory: a pool's blocks are arena
// allocations, reserved from the device when no freed block can be reused
// and given back at a synchronize above the release threshold or by
// TrimTo. The rules, from the CUDA Driver API's "Stream Ordered Memory
// Allocator" pages (cuMemAllocAsync, cuMemFreeAsync, cuMemPoolSetAttribute,
// cuMemPoolTrimTo, cuMemPoolDestroy), each quoted where it is kept:
//
//   - "The allocator is free to reallocate the memory as long as it can
//     guarantee that compliant memory accesses will not overlap
//     temporally. The allocator may refer to internal stream ordering as
//     well as inter-stream dependencies (such as CUDA events and null
//     stream dependencies) when establishing the temporal guarantee. The
//     allocator may also insert inter-stream dependencies to establish the
//     temporal guarantee." (the allocator's overview): a block freed on a
//     stream is reused by a later allocation on that stream (stream order
//     puts the allocation after the free), by one on a stream that waited
//     for an event recorded after the free (follow-event-dependencies),
//     by any once the free has run (allow-opportunistic), or by any with a
//     wait on the free queued on the allocating stream first
//     (allow-internal-dependencies), tried in that order. sim knows the
//     dependencies events make (vector clocks kept per stream below), not
//     the legacy default stream's implicit order with blocking streams,
//     which sim does not run (the emulated CUDA driver makes that order
//     with events, which sim sees): the strict reading, fewer reuses, a guess.
//   - Preferring reuse with an inserted dependency to reserving more
//     memory is a guess; the pages allow either.
//   - A block larger than asked for may be handed out whole ("The OS
//     allocations may happen at different granularity from the user
//     allocations", cuMemPoolTrimTo): the pool's used bytes count the
//     block, the ledger's StreamOrdered the request rounded up to 256.

// poolState is a device's stream-ordered pools and the stream order they
// reuse memory by. mu may be held while d.mu is taken, never the reverse.
type poolState struct {
	active atomic.Bool // a pool was used: streams keep their clocks from then on

	mu     sync.Mutex
	def    *memPool
	pools  []*memPool
	made   int                    // pools made, for their handles
	named  int                    // pools NewMemPool made, for their names
	blocks map[uintptr]*poolBlock // every block of every pool, by address
	// seq counts each stream's frees; deps[s][t] is the last free of t
	// that s's work is ordered after (through events s waited on).
	seq  map[*stream]uint64
	deps map[*stream]map[*stream]uint64
}

// poolClock is what an event recording carries for the pools: the
// recording stream, its frees so far, and what it depended on.
type poolClock struct {
	s    *stream
	seq  uint64
	deps map[*stream]uint64
}

// poolBlock is one reserved block of a pool.
type poolBlock struct {
	pool  *memPool
	addr  uintptr
	size  int64 // reserved bytes
	asked int64 // while handed out: the ledger's bytes (the request rounded up)
	live  bool  // handed out
	// Set by the free, while in the pool's free list:
	freedOn  *stream
	seq      uint64        // freedOn's free count at the free
	done     chan struct{} // closed when freedOn's execution reaches the free
	observed bool          // the host has seen the free complete (a synchronize)
	clock    vclock        // freedOn's clock at the free, for the stream race checker (nil when off)
}

func (b *poolBlock) completed() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// memPool is a sim stream-ordered pool. Its fields are guarded by the
// device's poolState.mu.
type memPool struct {
	d         *Device
	name      string
	handle    uintptr
	isDefault bool
	destroyed bool
	threshold int64
	reuse     [driver.NumReusePolicies]bool
	free      []*poolBlock // blocks freed, oldest first
	usage     driver.PoolUsage
	share     *poolShare // NewSharedMemPool's pools: the pool file (mempool_ipc.go)
}

var _ driver.MemPool = (*memPool)(nil)

func (d *Device) newPool(name string, isDefault bool) *memPool {
	ps := &d.pools
	ps.made++
	p := &memPool{d: d, name: name, handle: uintptr(ps.made), isDefault: isDefault}
	// "(default enabled)", for each of the three (cuMemPoolSetAttribute).
	for i := range p.reuse {
		p.reuse[i] = true
	}
	ps.pools = append(ps.pools, p)
	if ps.blocks == nil {
		ps.blocks = make(map[uintptr]*poolBlock)
		ps.seq = make(map[*stream]uint64)
		ps.deps = make(map[*stream]map[*stream]uint64)
	}
	ps.active.Store(true)
	return p
}

// DefaultMemPool returns the device's default stream-ordered pool, the one
// MallocAsync allocates from.
func (d *Device) DefaultMemPool() (driver.MemPool, error) {
	if d.Closed() {
		return nil, fmt.Errorf("sim: default mem pool: %w", driver.ErrClosed)
	}
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	return d.defaultPoolLocked(), nil
}

func (d *Device) defaultPoolLocked() *memPool {
	if d.pools.def == nil {
		d.pools.def = d.newPool("default", true)
	}
	return d.pools.def
}

// NewMemPool makes a stream-ordered pool of the device's memory
// (cuMemPoolCreate), named "pool-N".
func (d *Device) NewMemPool() (driver.MemPool, error) {
	if d.Closed() {
		return nil, fmt.Errorf("sim: new mem pool: %w", driver.ErrClosed)
	}
	if err := d.checkFault("new mem pool"); err != nil {
		return nil, err
	}
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	d.pools.named++
	return d.newPool(fmt.Sprintf("pool-%d", d.pools.named), false), nil
}

// MallocAsync allocates nbytes from the device's default pool in the
// stream's order (cuMemAllocAsync): "A pointer to the allocated memory is
// returned immediately"; work queued on the stream from now on may use it.
func (s *stream) MallocAsync(nbytes int64) (devarray.Ptr, error) {
	return s.mallocDefault(false, nbytes)
}

// mallocDefault is MallocAsync (pt: on the calling thread's per-thread
// default stream, for the stream race checker).
func (s *stream) mallocDefault(pt bool, nbytes int64) (devarray.Ptr, error) {
	s.d.pools.mu.Lock()
	p := s.d.defaultPoolLocked()
	s.d.pools.mu.Unlock()
	return s.mallocAsync(pt, nbytes, p, "malloc async")
}

// MallocFromPoolAsync is MallocAsync from pool mp (cuMemAllocFromPoolAsync),
// a pool of this device.
func (s *stream) MallocFromPoolAsync(nbytes int64, mp driver.MemPool) (devarray.Ptr, error) {
	return s.mallocFromPoolAsync(false, nbytes, mp)
}

func (s *stream) mallocFromPoolAsync(pt bool, nbytes int64, mp driver.MemPool) (devarray.Ptr, error) {
	p, ok := mp.(*memPool)
	if !ok || p.d != s.d {
		return 0, fmt.Errorf("sim: malloc from pool async: the pool is not from this device: %w", driver.ErrInvalidValue)
	}
	return s.mallocAsync(pt, nbytes, p, "malloc from pool async")
}

// mallocAsync allocates nbytes from p on s (pt: on the calling thread's
// per-thread default stream, for the stream race checker).
func (s *stream) mallocAsync(pt bool, nbytes int64, p *memPool, op string) (devarray.Ptr, error) {
	d := s.d
	if nbytes < 0 {
		return 0, fmt.Errorf("sim: %s %d bytes: %w", op, nbytes, driver.ErrInvalidValue)
	}
	if err := d.checkFault(op); err != nil {
		return 0, err
	}
	if s.isClosed() {
		return 0, fmt.Errorf("sim: %s: %w", op, driver.ErrClosed)
	}
	if nbytes > d.cfg.Memory {
		d.ledger.RecordFailure(accounting.StreamOrdered, nbytes)
		return 0, fmt.Errorf("sim: %s: %w", op, d.ledger.OutOfMemory(accounting.StreamOrdered, nbytes, d.ledger.Current(accounting.StreamOrdered), false))
	}
	size := alignUp(max(nbytes, 1))
	if err := d.ledger.Reserve(accounting.StreamOrdered, size); err != nil {
		return 0, fmt.Errorf("sim: %s: %w", op, err)
	}
	if injected(&d.allocCountdown) {
		d.ledger.Cancel(accounting.StreamOrdered, size)
		return 0, fmt.Errorf("sim: %s %d bytes: %w", op, nbytes, driver.ErrInjected)
	}
	ps := &d.pools
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p.destroyed {
		d.ledger.Cancel(accounting.StreamOrdered, size)
		return 0, fmt.Errorf("sim: %s: the pool was destroyed: %w", op, driver.ErrInvalidValue)
	}
	b, wait := p.reusable(s, size)
	if b != nil && wait {
		// Allow-internal-dependencies: "Allow cuMemAllocAsync to insert new
		// stream dependencies in order to establish the stream ordering
		// required to reuse a piece of memory released by cuMemFreeAsync".
		done := b.done
		if err := s.enqueueMarker(func() error { <-done; return nil }); err != nil {
			d.ledger.Cancel(accounting.StreamOrdered, size)
			return 0, fmt.Errorf("sim: %s: %w", op, err)
		}
		ps.depend(s, b.freedOn, b.seq)
		if d.check != nil && b.clock != nil {
			d.check.wait(s.lane, pt, b.clock) // the checker sees the inserted wait as a WaitEvent
		}
	}
	if b != nil {
		p.free = slices.DeleteFunc(p.free, func(x *poolBlock) bool { return x == b })
	} else {
		var err error
		if b, err = p.reserve(size); err != nil {
			d.ledger.Cancel(accounting.StreamOrdered, size)
			return 0, fmt.Errorf("sim: %s: %w", op, err)
		}
	}
	b.live, b.asked, b.freedOn, b.done, b.observed, b.clock = true, size, nil, nil, false, nil
	p.usage.Used += b.size
	p.usage.UsedHigh = max(p.usage.UsedHigh, p.usage.Used)
	d.mu.Lock()
	if !d.closed {
		d.requested[int64(b.addr-d.base)] = nbytes
	}
	d.mu.Unlock()
	if d.check != nil {
		// The block's new life starts here, whatever its old one was
		// (streamcheck_lifetime.go).
		d.check.allocated(op, s.lane, pt, b.addr, b.addr+uintptr(b.size))
	}
	d.ledger.Commit(accounting.StreamOrdered, b.addr, size)
	return devarray.Ptr(b.addr), nil
}

// reusable returns the smallest block freed in p that an allocation of size
// bytes on s may take, by the first rule that gives one: freed on s;
// freed where s depends on the free (follow-event-dependencies); its free
// completed (allow-opportunistic); any, after s waits for its free (wait:
// allow-internal-dependencies). Nil when none.
func (p *memPool) reusable(s *stream, size int64) (b *poolBlock, wait bool) {
	ps := &p.d.pools
	rules := []func(*poolBlock) bool{
		// Stream order: the allocation is queued after the free on one stream.
		func(x *poolBlock) bool { return x.freedOn == s },
		// "Allow cuMemAllocAsync to use memory asynchronously freed in
		// another stream as long as a stream ordering dependency of the
		// allocating stream on the free action exists. CUDA events and null
		// stream interactions can create the required stream ordered
		// dependencies." (CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
		func(x *poolBlock) bool {
			return p.reuse[driver.ReuseFollowEventDependencies] && ps.deps[s][x.freedOn] >= x.seq
		},
		// "Allow reuse of already completed frees when there is no
		// dependency between the free and allocation."
		// (CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC) Completed: the freeing
		// stream's execution has reached the free.
		func(x *poolBlock) bool { return p.reuse[driver.ReuseAllowOpportunistic] && x.completed() },
		func(*poolBlock) bool { return p.reuse[driver.ReuseAllowInternalDependencies] },
	}
	for i, rule := range rules {
		for _, x := range p.free {
			if x.size >= size && rule(x) && (b == nil || x.size < b.size) {
				b = x
			}
		}
		if b != nil {
			return b, i == len(rules)-1 && !b.completed()
		}
	}
	return nil, false
}

// reserve takes a new block of size bytes from the device's memory.
// ps.mu is held.
func (p *memPool) reserve(size int64) (*poolBlock, error) {
	d := p.d
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, driver.ErrClosed
	}
	off, ok := d.arena.alloc(size)
	var free, largest int64
	if !ok {
		free, largest = d.arena.size-d.arena.used, d.arena.largestFree()
	}
	d.mu.Unlock()
	if !ok {
		oom := d.ledger.OutOfMemory(accounting.StreamOrdered, size, d.ledger.Current(accounting.StreamOrdered), false)
		oom.DeviceFree, oom.DeviceTotal, oom.DeviceLargestFree = free, d.arena.size, largest
		return nil, oom
	}
	b := &poolBlock{pool: p, addr: d.base + uintptr(off), size: size}
	d.pools.blocks[b.addr] = b
	p.usage.Reserved += size
	p.usage.ReservedHigh = max(p.usage.ReservedHigh, p.usage.Reserved)
	return b, nil
}

// releaseBlock gives a free block's memory back to the device. ps.mu is held.
func (p *memPool) releaseBlock(b *poolBlock) {
	d := p.d
	p.free = slices.DeleteFunc(p.free, func(x *poolBlock) bool { return x == b })
	delete(d.pools.blocks, b.addr)
	p.usage.Reserved -= b.size
	if d.check != nil {
		d.check.released(b.addr, b.addr+uintptr(b.size))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	off := int64(b.addr - d.base)
	if size, ok := d.arena.release(off); ok {
		delete(d.requested, off)
		if size >= 1<<20 {
			punchHole(d.memfd, off, size)
		}
	}
}

// depend records that s's later work is ordered after t's free number seq.
// ps.mu is held.
func (ps *poolState) depend(s, t *stream, seq uint64) {
	m := ps.deps[s]
	if m == nil {
		m = make(map[*stream]uint64)
		ps.deps[s] = m
	}
	m[t] = max(m[t], seq)
}

// FreeAsync frees memory MallocAsync or MallocFromPoolAsync returned, in
// the stream's order (cuMemFreeAsync): "Inserts a free operation into
// hStream. The allocation must not be accessed after stream execution
// reaches the free." The pool's used bytes and the ledger drop now (the
// allocation is the program's no longer: a guess at when the driver's
// USED_MEM_CURRENT drops); the block is reused by the rules above. With
// the stream race checker on, a free that is not ordered after every use
// of the memory is refused with a *StreamRaceError, and so is every use
// queued after it (streamcheck_lifetime.go).
func (s *stream) FreeAsync(p devarray.Ptr) error { return s.freeAsync(false, p) }

// freeAsync is FreeAsync (pt: on the calling thread's per-thread default
// stream, for the stream race checker).
func (s *stream) freeAsync(pt bool, p devarray.Ptr) error {
	d := s.d
	if err := d.checkFault(fmt.Sprintf("free async %v", p)); err != nil {
		return err
	}
	ps := &d.pools
	ps.mu.Lock()
	b := ps.blocks[uintptr(p)]
	ok := b != nil && b.live
	ps.mu.Unlock()
	if !ok {
		return fmt.Errorf("sim: free async %v: not a live stream-ordered allocation: %w", p, driver.ErrInvalidValue)
	}
	done := make(chan struct{})
	if err := s.enqueueMarker(func() error { close(done); return nil }); err != nil {
		return fmt.Errorf("sim: free async %v: %w", p, err)
	}
	var clock vclock // the free's point in the stream, as an event recorded there
	if d.check != nil {
		var err error
		// Refused, the free leaves the block live: the marker queued above
		// closes a channel nothing waits on.
		if clock, err = d.check.freed(s.lane, pt, b.addr, b.addr+uintptr(b.size)); err != nil {
			return err
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !b.live { // freed twice at once: the other free won
		return fmt.Errorf("sim: free async %v: not a live stream-ordered allocation: %w", p, driver.ErrInvalidValue)
	}
	ps.seq[s]++
	b.live, b.freedOn, b.seq, b.done, b.observed, b.clock = false, s, ps.seq[s], done, false, clock
	pool := b.pool
	pool.usage.Used -= b.size
	pool.free = append(pool.free, b)
	pool.share.forget(b.addr) // its export data is stale from now on
	d.ledger.Free(accounting.StreamOrdered, b.addr, b.asked)
	if pool.destroyed {
		pool.sweepLocked()
	}
	return nil
}

// capture returns the pools' clock of stream s for an event recorded on
// it now, nil while no pool was used.
func (ps *poolState) capture(s *stream) *poolClock {
	if !ps.active.Load() {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return &poolClock{s: s, seq: ps.seq[s], deps: clone(ps.deps[s])}
}

func clone(m map[*stream]uint64) map[*stream]uint64 {
	out := make(map[*stream]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// waited records that s waits for a recording with clock c: its later work
// is ordered after every free c's stream made before the recording, and
// after what that stream depended on.
func (ps *poolState) waited(s *stream, c *poolClock) {
	if c == nil || !ps.active.Load() {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.depend(s, c.s, c.seq)
	for t, n := range c.deps {
		ps.depend(s, t, n)
	}
}

// synchronized is called when the host has waited for stream s (nil: for
// every stream), or for an event recording with clock c: frees it has
// seen complete count as observed, and each pool above its release
// threshold gives memory back: "When more than the release threshold bytes
// of memory are held by the memory pool, the allocator will try to release
// memory back to the OS on the next call to stream, event or context
// synchronize." (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) Blocks are released
// whole, oldest free first, while the pool holds more than the threshold:
// it may end below it (a guess; the driver's granularity is its own).
func (ps *poolState) synchronized(s *stream, c *poolClock) {
	if !ps.active.Load() {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range slices.Clone(ps.pools) {
		for _, b := range p.free {
			if !b.completed() {
				continue
			}
			switch {
			case c != nil:
				if (b.freedOn == c.s && b.seq <= c.seq) || c.deps[b.freedOn] >= b.seq {
					b.observed = true
				}
			case s == nil || b.freedOn == s:
				b.observed = true
			}
		}
		if p.destroyed {
			p.sweepLocked()
			continue
		}
		for _, b := range slices.Clone(p.free) {
			if p.usage.Reserved <= p.threshold {
				break
			}
			if b.observed {
				p.releaseBlock(b)
			}
		}
	}
}

// sweepLocked releases a destroyed pool's blocks whose frees are complete,
// and forgets the pool once it holds none.
func (p *memPool) sweepLocked() {
	for _, b := range slices.Clone(p.free) {
		if b.completed() {
			p.releaseBlock(b)
		}
	}
	if p.usage.Reserved == 0 {
		ps := &p.d.pools
		ps.pools = slices.DeleteFunc(ps.pools, func(x *memPool) bool { return x == p })
	}
}

// closePools counts every stream-ordered allocation still live freed and
// gives every pool's memory back, at Close, before the arena is emptied.
// The streams are closed: every free has run.
func (d *Device) closePools() {
	ps := &d.pools
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.pools {
		for _, b := range ps.blocks {
			if b.pool != p {
				continue
			}
			if b.live {
				d.ledger.Free(accounting.StreamOrdered, b.addr, b.asked)
				b.live = false
				p.usage.Used -= b.size
				p.free = append(p.free, b)
			}
		}
		for _, b := range slices.Clone(p.free) {
			p.releaseBlock(b)
		}
		p.destroyed = true
		p.share.close()
	}
	ps.pools, ps.def = nil, nil
}

// isStreamOrdered reports whether p is the start of a block of a pool: sim's
// Free refuses it.
func (d *Device) isStreamOrdered(p devarray.Ptr) bool {
	if !d.pools.active.Load() {
		return false
	}
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	_, ok := d.pools.blocks[uintptr(p)]
	return ok
}

// poolStats are the pools' figures for the ledger's snapshots.
func (d *Device) poolStats() []accounting.PoolStats {
	if !d.pools.active.Load() {
		return nil
	}
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	var out []accounting.PoolStats
	for _, p := range d.pools.pools {
		if p.destroyed {
			continue
		}
		u := p.usage
		out = append(out, accounting.PoolStats{Name: p.name, Reserved: u.Reserved, ReservedHigh: u.ReservedHigh,
			Used: u.Used, UsedHigh: u.UsedHigh, ReleaseThreshold: p.threshold})
	}
	return out
}

// Name returns "default" or "pool-N".
func (p *memPool) Name() string { return p.name }

// Handle returns the pool's number on its device, from 1.
func (p *memPool) Handle() uintptr { return p.handle }

// usable returns an error for a destroyed pool or a closed device. ps.mu is held.
func (p *memPool) usable(op string) error {
	switch {
	case p.d.Closed():
		return fmt.Errorf("sim: mem pool %s: %w", op, driver.ErrClosed)
	case p.destroyed:
		return fmt.Errorf("sim: mem pool %s: the pool was destroyed: %w", op, driver.ErrInvalidValue)
	}
	return nil
}

func (p *memPool) SetReleaseThreshold(bytes int64) error {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("set release threshold"); err != nil {
		return err
	}
	if bytes < 0 {
		return fmt.Errorf("sim: mem pool set release threshold %d: %w", bytes, driver.ErrInvalidValue)
	}
	p.threshold = bytes
	return nil
}

func (p *memPool) ReleaseThreshold() (int64, error) {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("release threshold"); err != nil {
		return 0, err
	}
	return p.threshold, nil
}

func (p *memPool) SetReuse(r driver.ReusePolicy, allow bool) error {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("set reuse"); err != nil {
		return err
	}
	if r >= driver.NumReusePolicies {
		return fmt.Errorf("sim: mem pool set reuse %v: %w", r, driver.ErrInvalidValue)
	}
	p.reuse[r] = allow
	return nil
}

func (p *memPool) Reuse(r driver.ReusePolicy) (bool, error) {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("reuse"); err != nil {
		return false, err
	}
	if r >= driver.NumReusePolicies {
		return false, fmt.Errorf("sim: mem pool reuse %v: %w", r, driver.ErrInvalidValue)
	}
	return p.reuse[r], nil
}

// TrimTo gives freed blocks back to the device (cuMemPoolTrimTo):
// "Releases memory back to the OS until the pool contains fewer than
// minBytesToKeep reserved bytes, or there is no more memory that the
// allocator can safely release." and "Otherwise the pool will be
// guaranteed to have at least minBytesToKeep bytes reserved after the
// operation.": a block goes only if the pool keeps at least keep bytes
// without it. "Allocations that have been asynchronously freed but whose
// completion has not been observed on the host (eg. by a synchronize) can
// count as outstanding.": the strict reading, they always do here.
func (p *memPool) TrimTo(keep int64) error {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("trim"); err != nil {
		return err
	}
	if keep < 0 {
		return fmt.Errorf("sim: mem pool trim to %d: %w", keep, driver.ErrInvalidValue)
	}
	for _, b := range slices.Clone(p.free) {
		if b.observed && p.usage.Reserved-b.size >= keep {
			p.releaseBlock(b)
		}
	}
	return nil
}

func (p *memPool) Usage() (driver.PoolUsage, error) {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("usage"); err != nil {
		return driver.PoolUsage{}, err
	}
	return p.usage, nil
}

// ResetHigh resets both high figures to the current ones: "Reset the high
// watermark that tracks the amount of backing memory that was allocated
// for the memory pool. It is illegal to set this attribute to a non-zero
// value." (CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH; USED_MEM_HIGH alike).
func (p *memPool) ResetHigh() error { return ResetPoolHigh(p, true, true) }

// Destroy destroys a pool NewMemPool made: "If any pointers obtained from
// this pool haven't been freed or the pool has free operations that
// haven't completed when cuMemPoolDestroy is invoked, the function will
// return immediately and the resources associated with the pool will be
// released automatically once there are no more outstanding allocations."
// The default pool is refused: "A device's default memory pool cannot be
// destroyed." (cuMemPoolDestroy); that the refusal is an error wrapping
// ErrInvalidValue (CUDA_ERROR_INVALID_VALUE, the page's one error), not a
// success that does nothing, is a guess (device/cuda/conformance logs it).
func (p *memPool) Destroy() error {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if p.destroyed {
		return nil
	}
	if p.isDefault {
		return fmt.Errorf("sim: destroy mem pool: the device's default pool cannot be destroyed: %w", driver.ErrInvalidValue)
	}
	p.destroyed = true
	p.share.close()
	p.sweepLocked()
	return nil
}

// ResetPoolHigh resets one or both high figures of a sim pool to the
// current ones, as setting CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH or
// USED_MEM_HIGH to 0 does (the emulated CUDA driver sets each alone).
func ResetPoolHigh(mp driver.MemPool, reserved, used bool) error {
	p, ok := mp.(*memPool)
	if !ok {
		return fmt.Errorf("sim: reset pool high: not a sim pool: %w", driver.ErrInvalidValue)
	}
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("reset high"); err != nil {
		return err
	}
	if reserved {
		p.usage.ReservedHigh = p.usage.Reserved
	}
	if used {
		p.usage.UsedHigh = p.usage.Used
	}
	return nil
}
