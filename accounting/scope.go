package accounting

import (
	"fmt"
	"time"
)

// Scope counts what happens in a block of code, like RMM's push_counters.
// Scopes nest: while a scope is the innermost one, every event recorded in
// the ledger is counted in it too, and when it is popped its counts are
// added to the scope around it. A scope's Current is the net change since
// it was pushed and its Peak the highest level above where it started.
//
// The ledger has one stack of scopes, shared by all goroutines: events from
// other goroutines land in whatever scope is innermost. Events racing with
// Pop may miss the enclosing scope.
type Scope struct {
	name   string
	l      *Ledger
	parent *Scope
	c      counters
	start  time.Time
	base   [NumKinds]int64
	popped bool
}

// Push starts a scope named name inside the current innermost one.
//
// A nil Ledger's scope counts nothing; its Pop returns ErrNil.
func (l *Ledger) Push(name string) *Scope {
	if l == nil {
		return &Scope{name: name}
	}
	l.scopeMu.Lock()
	defer l.scopeMu.Unlock()
	s := &Scope{name: name, l: l, parent: l.top.Load(), start: time.Now()}
	for k := range s.base {
		s.base[k] = l.all.kinds[k].current.Load()
		s.c.kinds[k].peak.Store(s.base[k])
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
	l.scopeMu.Lock()
	defer l.scopeMu.Unlock()
	if s.popped {
		return Snapshot{}, fmt.Errorf("accounting: scope %q was already popped: %w", s.name, ErrInvalidArgument)
	}
	if top := l.top.Load(); top != s {
		return Snapshot{}, fmt.Errorf("accounting: scope %q is not the innermost; pop %q first: %w", s.name, top.name, ErrInvalidArgument)
	}
	s.popped = true
	l.top.Store(s.parent)
	snap := s.c.snapshot(s.name, l, s.base)
	if p := s.parent; p != nil {
		p.c.merge(&s.c)
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

// merge adds a popped child's counts into c.
func (c *counters) merge(child *counters) {
	for k := range c.kinds {
		ck, cc := &c.kinds[k], &child.kinds[k]
		ck.current.Add(cc.current.Load())
		ck.allocs.Add(cc.allocs.Load())
		ck.frees.Add(cc.frees.Load())
		ck.allocated.Add(cc.allocated.Load())
		ck.freed.Add(cc.freed.Load())
		ck.failed.Add(cc.failed.Load())
		raise(&ck.peak, cc.peak.Load())
	}
	for d := range c.copies {
		for p := range c.copies[d] {
			mergeCopy(&c.copies[d][p], &child.copies[d][p])
		}
	}
	mergeCopy(&c.memsets, &child.memsets)
}

func mergeCopy(dst, src *copyCounters) {
	dst.count.Add(src.count.Load())
	dst.bytes.Add(src.bytes.Load())
	dst.nanos.Add(src.nanos.Load())
}
