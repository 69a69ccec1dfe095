package accounting

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// How the ledger scales across cores.
//
// The counters that only ever add up (allocations, frees, bytes, failures,
// copies, memsets) are sharded: each P (the Go scheduler's processor, one
// per core in use) adds to its own shard, on cache lines no other P writes,
// and a snapshot sums the shards. The counters that a limit or a peak needs
// at one instant (bytes in use, per kind) stay single atomic counters, on
// cache lines of their own, so that a limit is enforced exactly (a
// compare-and-swap that never lets the total pass it and never refuses what
// fits) and a peak is a level the ledger really reached.
//
// Snapshots are consistent: every event is seen whole or not at all, and
// the snapshot is the state after one set of events closed under "happened
// before". A recording goroutine pins itself to its P and marks the P's
// shard active while it writes (two uncontended atomic adds, on its own
// shard); a snapshot raises the ledger's freeze flag, waits for the active
// marks to drop to zero, reads and lowers the flag. A recorder that finds
// the flag up steps back and waits, so a snapshot holds recorders up for
// the time it takes to read the counters, a few microseconds. Scopes are
// pushed and popped under the same freeze, so no event is lost between a
// scope and its parent.
//
// A shard is written only by the goroutine pinned to its P, inside its
// active mark, and read only while every mark is down: its counters are
// plain integers. The atomic marks order the writes (each mark's add reads
// the one before it, each snapshot's wait reads the last), so there is no
// data race and the race detector agrees. A P whose id is past the shards
// (GOMAXPROCS raised after the ledger made them) records into one extra
// shard under a mutex instead.

// procPin pins the calling goroutine to its P and returns the P's id; it
// must be followed by procUnpin. Between the two the goroutine is not
// preempted and no other goroutine runs on the P. The runtime keeps both for
// packages that link to them (go.dev/issue/67401); sync.Pool uses the same pair.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// maxShards bounds the shards of a ledger (and of each of its scopes): Ps
// beyond it share the overflow shard.
const maxShards = 256

// kindCounts are a shard's counts of one memory kind.
type kindCounts struct {
	allocs, frees, allocated, freed, failed int64
}

type copyCounts struct {
	count, bytes, nanos int64
}

func (c *copyCounts) add(n int64, d time.Duration) {
	c.count++
	c.bytes += n
	c.nanos += int64(d)
}

func (c *copyCounts) addFrom(o *copyCounts) {
	c.count += o.count
	c.bytes += o.bytes
	c.nanos += o.nanos
}

// counts is a full set of the counters that only add up: one shard of the
// ledger's or a scope's, or their sum.
type counts struct {
	kinds   [NumKinds]kindCounts
	copies  [NumDirections][NumPaths]copyCounts
	memsets copyCounts
}

// addFrom adds o's counts to c.
func (c *counts) addFrom(o *counts) {
	for k := range c.kinds {
		ck, ok := &c.kinds[k], &o.kinds[k]
		ck.allocs += ok.allocs
		ck.frees += ok.frees
		ck.allocated += ok.allocated
		ck.freed += ok.freed
		ck.failed += ok.failed
	}
	for d := range c.copies {
		for p := range c.copies[d] {
			c.copies[d][p].addFrom(&o.copies[d][p])
		}
	}
	c.memsets.addFrom(&o.memsets)
}

// shard is one P's counts, with the mark of a recorder writing to it.
type shard struct {
	active   atomic.Int64 // recorders writing to this shard now: 0 or 1
	overflow bool         // the shard of the Ps past the others, written under Ledger.overflowMu
	c        counts
	_        [shardPad]byte
}

// shardPad pads a shard to a multiple of 128 bytes (two cache lines, for
// CPUs that fetch lines in pairs) with at least a line between one shard's
// counters and the next one's, so that no two Ps write one line wherever
// the allocation starts.
const shardPad = 64 + (128-(unsafe.Sizeof(shardHead{})+unsafe.Sizeof(counts{})+64)%128)%128

// shardHead is the fields of a shard before its counts.
type shardHead struct {
	active   atomic.Int64
	overflow bool
}

// shardSet is a ledger's or a scope's shards: one per P, and the overflow
// shard last.
type shardSet []shard

// newShardSet returns shards for the Ps there are now (at most maxShards)
// and the overflow shard.
func newShardSet() *shardSet {
	s := make(shardSet, min(runtime.GOMAXPROCS(0), maxShards)+1)
	s[len(s)-1].overflow = true
	return &s
}

// sum adds up the shards' counts. The caller has frozen the ledger.
func (s shardSet) sum() (out counts) {
	for i := range s {
		out.addFrom(&s[i].c)
	}
	return out
}

// shardSet returns the ledger's shards, making them on first use (the zero
// Ledger has none yet).
func (l *Ledger) shardSet() shardSet {
	if s := l.shards.Load(); s != nil {
		return *s
	}
	l.shards.CompareAndSwap(nil, newShardSet())
	return *l.shards.Load()
}

// enter starts recording an event: it pins the goroutine to its P, marks
// the P's shard active, and returns the shard's index and the shard. It
// waits while a snapshot is being taken. Every enter needs its leave.
func (l *Ledger) enter() (int, *shard) {
	set := l.shardSet()
	for {
		i := procPin()
		if i >= len(set)-1 {
			procUnpin()
			return l.enterOverflow(set)
		}
		s := &set[i]
		s.active.Add(1)
		if !l.frozen.Load() {
			return i, s
		}
		s.active.Add(-1)
		procUnpin()
		l.waitThaw()
	}
}

// enterOverflow is enter for a P past the shards: the overflow shard,
// under the overflow mutex.
func (l *Ledger) enterOverflow(set shardSet) (int, *shard) {
	i := len(set) - 1
	s := &set[i]
	for {
		l.overflowMu.Lock()
		procPin() // as leave expects
		s.active.Add(1)
		if !l.frozen.Load() {
			return i, s
		}
		s.active.Add(-1)
		procUnpin()
		l.overflowMu.Unlock()
		l.waitThaw()
	}
}

// leave ends what enter began.
func (l *Ledger) leave(s *shard) {
	s.active.Add(-1)
	procUnpin()
	if s.overflow {
		l.overflowMu.Unlock()
	}
}

// waitThaw waits, unpinned, until no snapshot is being taken.
func (l *Ledger) waitThaw() {
	for l.frozen.Load() {
		runtime.Gosched()
	}
}

// freeze stops recording: once it returns, no event is half recorded and
// none starts until thaw. Snapshots, Push and Pop run frozen.
func (l *Ledger) freeze() {
	l.freezeMu.Lock()
	l.frozen.Store(true)
	if set := l.shards.Load(); set != nil {
		for i := range *set {
			for (*set)[i].active.Load() != 0 {
				runtime.Gosched()
			}
		}
	}
}

// thaw lets recording go on after freeze.
func (l *Ledger) thaw() {
	l.frozen.Store(false)
	l.freezeMu.Unlock()
}
