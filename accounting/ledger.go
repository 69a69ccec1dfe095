package accounting

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// level is the state of one memory kind that must be right at every
// instant, not just summed up later: the bytes in use (the counter a limit
// is checked against), the peak, the limit, and the bytes a caching pool
// holds. Each counter that is written often has cache lines of its own.
type level struct {
	current atomic.Int64 // bytes in use or reserved
	_       [120]byte
	cached  atomic.Int64 // bytes a caching pool holds unused (AddCached)
	_       [120]byte
	peak    atomic.Int64 // the highest current a commit saw; written rarely, read at every commit
	limit   atomic.Int64 // 0: none
	_       [112]byte
}

// raise sets v to x if x is larger.
func raise(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// Ledger counts every allocation, free and copy of one device (and the host
// memory it uses): per memory kind the allocations, frees and bytes current,
// peak and total; per copy direction and path the count, bytes and time.
// The counters are atomic, so one ledger serves any number of goroutines,
// and the zero Ledger is ready to use (a nil one records nothing, reports
// zeros and returns ErrNil where a method returns an error). Recording costs
// a few uncontended atomic adds on the recording core's own counters (see
// shard.go: the ledger scales across cores) and allocates nothing unless the
// event log is on (StartLog). Snapshots see every event whole or not at all.
type Ledger struct {
	// Read at every event, written rarely.
	name       string
	top        atomic.Pointer[Scope]
	log        atomic.Pointer[eventLog]
	rec        atomic.Pointer[Recording] // Record's, or nil
	shards     atomic.Pointer[shardSet]
	frozen     atomic.Bool
	memInfo    atomic.Pointer[MemInfoFunc]
	pools      atomic.Pointer[PoolsFunc]
	overhead   atomic.Uint64 // math.Float64bits of the factor; 0: DefaultOverhead
	freezeMu   sync.Mutex    // one snapshot, Push or Pop at a time
	overflowMu sync.Mutex    // the overflow shard's writers (see shard.go)
	_          [56]byte      // a cache line between the read-mostly fields and the first level
	levels     [NumKinds]level
	// Written at each kernel launch, under its own mutex, after the last
	// level's padding: no level's counters share its cache line.
	launches launchCounts  // kernel launches per name (RecordLaunch)
	managed  managedCounts // managed memory's page faults, read duplicates and evictions
}

// MemInfoFunc returns a device's free and total memory in bytes.
type MemInfoFunc func() (free, total int64, err error)

// NewLedger returns an empty ledger whose reports carry the given name
// (usually the device, "sim:0").
func NewLedger(name string) *Ledger { return &Ledger{name: name} }

// Name returns the name given to NewLedger.
func (l *Ledger) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// SetMemInfo tells the ledger how to ask its device for free and total
// memory, so that an out-of-memory error can carry them. f must not record
// anything in this ledger. A nil f forgets the function.
func (l *Ledger) SetMemInfo(f MemInfoFunc) {
	switch {
	case l == nil:
	case f == nil:
		l.memInfo.Store(nil)
	default:
		l.memInfo.Store(&f)
	}
}

// SetLimit sets the most bytes of kind k that may be in use at once; 0
// removes the limit. Allocations already made are not affected.
func (l *Ledger) SetLimit(k Kind, bytes int64) error {
	if l == nil {
		return fmt.Errorf("accounting: set limit: %w", ErrNil)
	}
	if k >= NumKinds || bytes < 0 {
		return fmt.Errorf("accounting: set limit of %v to %d bytes: %w", k, bytes, ErrInvalidArgument)
	}
	l.levels[k].limit.Store(bytes)
	return nil
}

// Limit returns the limit of kind k, 0 when none is set.
func (l *Ledger) Limit(k Kind) int64 {
	if l == nil || k >= NumKinds {
		return 0
	}
	return l.levels[k].limit.Load()
}

// Current returns the bytes of kind k in use now.
func (l *Ledger) Current(k Kind) int64 {
	if l == nil || k >= NumKinds {
		return 0
	}
	return l.levels[k].current.Load()
}

// Reserve counts n bytes of kind k as in use before the memory is allocated,
// and fails with an *OutOfMemoryError if that would pass the kind's limit.
// After Reserve, call Commit when the allocation succeeded or Cancel when it
// failed.
//
// The limit is exact under any concurrency: the bytes in use never pass it,
// and a reservation is refused only when, at the instant it was checked,
// the bytes in use plus n were more than the limit.
func (l *Ledger) Reserve(k Kind, n int64) error {
	if l == nil {
		return fmt.Errorf("accounting: reserve %d bytes of %v: %w", n, k, ErrNil)
	}
	if k >= NumKinds || n < 0 {
		return fmt.Errorf("accounting: reserve %d bytes of %v: %w", n, k, ErrInvalidArgument)
	}
	i, sh := l.enter()
	inUse, ok := l.reserve(k, n)
	if !ok {
		l.countFailure(i, sh, k)
	}
	l.leave(sh)
	if !ok {
		l.logFailure(k, n, inUse)
		return l.OutOfMemory(k, n, inUse, true)
	}
	return nil
}

// reserve adds n to the bytes of kind k in use unless that passes the
// limit. It returns the bytes in use before and whether it added them.
func (l *Ledger) reserve(k Kind, n int64) (int64, bool) {
	lv := &l.levels[k]
	if lim := lv.limit.Load(); lim > 0 {
		for {
			cur := lv.current.Load()
			if cur > lim-n {
				return cur, false
			}
			if lv.current.CompareAndSwap(cur, cur+n) {
				return cur, true
			}
		}
	}
	return lv.current.Add(n) - n, true
}

// Cancel gives back a reservation whose allocation failed, and counts the failure.
func (l *Ledger) Cancel(k Kind, n int64) {
	if l == nil || k >= NumKinds {
		return
	}
	i, sh := l.enter()
	cur := l.levels[k].current.Add(-n)
	l.countFailure(i, sh, k)
	l.leave(sh)
	l.logFailure(k, n, cur)
}

// RecordFailure counts an allocation of n bytes of kind k that failed
// without a reservation, for example one larger than the whole device.
func (l *Ledger) RecordFailure(k Kind, n int64) {
	if l == nil || k >= NumKinds {
		return
	}
	i, sh := l.enter()
	l.countFailure(i, sh, k)
	l.leave(sh)
	l.logFailure(k, n, l.levels[k].current.Load())
}

// countFailure counts a failed allocation in shard i (sh) and the innermost scope.
func (l *Ledger) countFailure(i int, sh *shard, k Kind) {
	sh.c.kinds[k].failed++
	if s := l.top.Load(); s != nil {
		s.shard(i).kinds[k].failed++
	}
}

func (l *Ledger) logFailure(k Kind, n, level int64) {
	if lg := l.log.Load(); lg != nil {
		lg.add(Event{Op: OpFailed, Kind: k, Bytes: n, Level: level})
	}
	if r := l.rec.Load(); r != nil {
		r.failed(k, n)
	}
}

// OutOfMemory builds the error for a failed allocation of n bytes of kind k
// with inUse bytes in use, filling in the device's free and total memory when
// a MemInfoFunc was set. byLimit says whether the ledger's limit refused it.
func (l *Ledger) OutOfMemory(k Kind, n, inUse int64, byLimit bool) *OutOfMemoryError {
	e := &OutOfMemoryError{Kind: k, Requested: n, InUse: inUse, Limit: l.Limit(k), DeviceFree: -1, DeviceTotal: -1, ByLimit: byLimit}
	if l == nil {
		return e
	}
	if f := l.memInfo.Load(); f != nil {
		if free, total, err := (*f)(); err == nil {
			e.DeviceFree, e.DeviceTotal = free, total
		}
	}
	return e
}

// Commit records the allocation at addr of n bytes reserved by Reserve.
func (l *Ledger) Commit(k Kind, addr uintptr, n int64) {
	if l == nil || k >= NumKinds {
		return
	}
	i, sh := l.enter()
	cur := l.levels[k].current.Load()
	l.commit(i, sh, k, n, cur)
	l.leave(sh)
	l.logAlloc(k, addr, n, cur)
}

// commit counts an allocation of n bytes with cur bytes in use.
func (l *Ledger) commit(i int, sh *shard, k Kind, n, cur int64) {
	c := &sh.c.kinds[k]
	c.allocs++
	c.allocated += n
	raise(&l.levels[k].peak, cur)
	if s := l.top.Load(); s != nil {
		sc := &s.shard(i).kinds[k]
		sc.allocs++
		sc.allocated += n
		raise(&s.peak[k], cur)
	}
}

func (l *Ledger) logAlloc(k Kind, addr uintptr, n, level int64) {
	if lg := l.log.Load(); lg != nil {
		lg.add(Event{Op: OpAlloc, Kind: k, Bytes: n, Addr: addr, Level: level})
	}
	if r := l.rec.Load(); r != nil {
		r.alloc(k, addr, n, 0, false)
	}
}

// Alloc records an allocation that needs no reservation first: Reserve and
// Commit in one call. It fails, recording nothing, when the limit would be passed.
func (l *Ledger) Alloc(k Kind, addr uintptr, n int64) error {
	if l == nil {
		return fmt.Errorf("accounting: reserve %d bytes of %v: %w", n, k, ErrNil)
	}
	if k >= NumKinds || n < 0 {
		return fmt.Errorf("accounting: reserve %d bytes of %v: %w", n, k, ErrInvalidArgument)
	}
	i, sh := l.enter()
	inUse, ok := l.reserve(k, n)
	if ok {
		l.commit(i, sh, k, n, inUse+n)
	} else {
		l.countFailure(i, sh, k)
	}
	l.leave(sh)
	if !ok {
		l.logFailure(k, n, inUse)
		return l.OutOfMemory(k, n, inUse, true)
	}
	l.logAlloc(k, addr, n, inUse+n)
	return nil
}

// Free records that the n-byte allocation of kind k at addr was freed.
func (l *Ledger) Free(k Kind, addr uintptr, n int64) {
	if l == nil || k >= NumKinds {
		return
	}
	i, sh := l.enter()
	cur := l.levels[k].current.Add(-n)
	c := &sh.c.kinds[k]
	c.frees++
	c.freed += n
	if s := l.top.Load(); s != nil {
		sc := &s.shard(i).kinds[k]
		sc.frees++
		sc.freed += n
	}
	l.leave(sh)
	if lg := l.log.Load(); lg != nil {
		lg.add(Event{Op: OpFree, Kind: k, Bytes: n, Addr: addr, Level: cur})
	}
	if r := l.rec.Load(); r != nil {
		r.free(k, addr, n, 0, false)
	}
}

// AddCached changes by delta the bytes of kind k that a caching pool holds
// without handing them out: memory that counts as allocated (the pool got
// it from the device) but that no user holds. Pools call it when a block
// is cached (+) and when it is handed out again or released (-). It is one
// atomic add: a pool's own changes, made in order, never show a negative total.
func (l *Ledger) AddCached(k Kind, delta int64) {
	if l != nil && k < NumKinds {
		l.levels[k].cached.Add(delta)
	}
}

// RecordCopy records a copy of n bytes in direction dir along path p that
// took d, timed from completed work (never from the queueing).
//
// The chunks of a staged copy (HtoD and DtoH on PathStaged) count their
// bytes and copies here but not their time: the staged path's time is the
// wall time of each whole staged copy, from its first chunk until its last
// DMA has completed, which the staged path adds with RecordCopyTime once it
// is done. Chunks overlap on several streams, and a backend that records an
// async copy when it is queued cannot know its time, so the chunks' own
// times would make the path's figure neither one thing nor the other. The
// event log keeps each chunk's d as given.
func (l *Ledger) RecordCopy(dir Direction, p Path, n int64, d time.Duration) {
	if l == nil || dir >= NumDirections || p >= NumPaths {
		return
	}
	counted := d
	if wallTimed(dir, p) {
		counted = 0
	}
	i, sh := l.enter()
	sh.c.copies[dir][p].add(n, counted)
	if s := l.top.Load(); s != nil {
		s.shard(i).copies[dir][p].add(n, counted)
	}
	l.leave(sh)
	if lg := l.log.Load(); lg != nil {
		lg.add(Event{Op: OpCopy, Dir: dir, Path: p, Bytes: n, Dur: d})
	}
}

// RecordCopyTime adds d to the time of direction dir along path p without
// counting a copy or bytes: the wall time of a whole staged copy, whose
// chunks RecordCopy counted without their time. Call it once the copy has
// completed on the device.
func (l *Ledger) RecordCopyTime(dir Direction, p Path, d time.Duration) {
	if l == nil || dir >= NumDirections || p >= NumPaths {
		return
	}
	i, sh := l.enter()
	sh.c.copies[dir][p].nanos += int64(d)
	if s := l.top.Load(); s != nil {
		s.shard(i).copies[dir][p].nanos += int64(d)
	}
	l.leave(sh)
}

// wallTimed reports whether the time of direction dir along path p comes
// from RecordCopyTime rather than from each copy: the staged path's DMA.
func wallTimed(dir Direction, p Path) bool {
	return p == PathStaged && (dir == HtoD || dir == DtoH)
}

// RecordMemset records that n bytes of device memory were set, taking d.
func (l *Ledger) RecordMemset(n int64, d time.Duration) {
	if l == nil {
		return
	}
	i, sh := l.enter()
	sh.c.memsets.add(n, d)
	if s := l.top.Load(); s != nil {
		s.shard(i).memsets.add(n, d)
	}
	l.leave(sh)
	if lg := l.log.Load(); lg != nil {
		lg.add(Event{Op: OpMemset, Bytes: n, Dur: d})
	}
}
