package accounting

import (
	"expvar"
	"fmt"
	"sync"
)

var publishMu sync.Mutex

// Publish exposes the ledger's snapshot as the expvar variable name, so a
// service that serves /debug/vars shows its counters. Unlike expvar.Publish
// it returns an error, not a panic, when the name is taken.
func (l *Ledger) Publish(name string) error {
	if l == nil {
		return fmt.Errorf("accounting: publish %q: %w", name, ErrNil)
	}
	publishMu.Lock()
	defer publishMu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("accounting: publish: expvar %q already exists: %w", name, ErrInvalidArgument)
	}
	expvar.Publish(name, expvar.Func(func() any { return l.Snapshot() }))
	return nil
}
