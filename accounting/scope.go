package accounting

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Scope counts what happens in a block of code, like RMM's push_counters.
// Scopes nest: while a scope is the innermost one, every event recorded in
// the ledger is counted in it too, and when it is popped its counts are
// added to the scope around it. A scope's Current is the net change since
// it was pushed and its Peak the highest level above where it started.
//
// The ledger has one stack of scopes, shared by all goroutines: events from
// other goroutines land in whatever scope is innermost. Push and Pop
// happen between events, never during one: each event is counted in the
// scope that was innermost when it was recorded, and so, once that scope
// is popped, in its parent.
type Scope struct {
	name   string
	l      *Ledger
	parent *Scope
	set    shardSet // the scope's counts, sharded like the ledger's
	peak   [NumKinds]atomic.Int64
	start  time.Time
	base   [NumKinds]int64
	popped bool
	// launches are the kernel launches counted in the scope (RecordLaunch),
	// guarded by its ledger's launches.mu.
	launches kernelTally
}

// shard returns the scope's counts for the ledger's shard i.
func (s *Scope) shard(i int) *counts { return &s.set[i].c }

// Push starts a scope named name inside the current innermost one.
//
// A nil Ledger's scope counts nothing; its Pop returns ErrNil.
func (l *Ledger) Push(name string) *Scope {
	if l == nil {
		return &Scope{name: name}
	}
	s := &Scope{name: name, l: l, set: make(shardSet, len(l.shardSet())), start: time.Now()}
	l.freeze()
	defer l.thaw()
	s.parent = l.top.Load()
	for k := range s.base {
		s.base[k] = l.levels[k].current.Load()
		s.peak[k].Store(s.base[k])
	}
	l.top.Store(s)
	return s
}

// Pop ends the scope and returns its counts. Only the innermost scope can be
// popped; popping another, or one already popped, is an error.
func (s *Scope) Pop() (Snapshot, error) {
	if s == nil || s.l == nil {
		return Snapshot{}, fmt.Errorf("accounting: pop scope: %w", ErrNil)
	}
	l := s.l
	l.freeze()
	defer l.thaw()
	if s.popped {
		return Snapshot{}, fmt.Errorf("accounting: scope %q was already popped: %w", s.name, ErrInvalidArgument)
	}
	if top := l.top.Load(); top != s {
		return Snapshot{}, fmt.Errorf("accounting: scope %q is not the innermost; pop %q first: %w", s.name, top.name, ErrInvalidArgument)
	}
	s.popped = true
	l.top.Store(s.parent)
	t := s.set.sum()
	var peak [NumKinds]int64
	for k := range peak {
		peak[k] = s.peak[k].Load()
	}
	snap := t.snapshot(s.name, l, s.base, peak, true)
	snap.Kernels = l.launches.popLaunches(s)
	if p := s.parent; p != nil {
		p.set[0].c.addFrom(&t)
		for k := range peak {
			raise(&p.peak[k], peak[k])
		}
	}
	return snap, nil
}

// Name returns the scope's name.
func (s *Scope) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Measure runs fn inside a scope named name and returns the scope's counts
// along with fn's error.
func (l *Ledger) Measure(name string, fn func() error) (Snapshot, error) {
	if l == nil || fn == nil {
		return Snapshot{}, fmt.Errorf("accounting: measure %q: %w", name, ErrNil)
	}
	s := l.Push(name)
	ferr := fn()
	snap, err := s.Pop()
	if err != nil {
		return snap, err
	}
	return snap, ferr
}
