package devarray

import (
	"fmt"
	"sync"
)

// Hold keeps the memory behind a (and every view of it) allocated until
// the returned release function is called, even if its owner calls Free
// first: Free then marks the array freed and the last release frees the
// memory. Exports that hand a pointer to code cuarray does not control (a
// DLPack consumer, which calls a deleter when it is done) hold the memory
// this way. Release is idempotent and safe from any goroutine; its error
// is the one freeing the memory returned, if it was the last release.
// Hold returns ErrFreed when the memory is already gone.
func (a *DevArray) Hold() (release func() error, err error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: hold: %w", err)
	}
	b := a.buf
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil, fmt.Errorf("devarray: hold %v: %w", a, ErrFreed)
	}
	b.holds++
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() { err = b.unhold() })
		return err
	}, nil
}

// unhold drops one hold, freeing the memory when Free was deferred to it.
func (b *buffer) unhold() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holds--
	if b.holds > 0 || !b.deferred {
		return nil
	}
	b.deferred = false
	return b.releaseMemory()
}

// Holds returns the number of Holds on a's memory not yet released.
func (a *DevArray) Holds() int {
	if a.check() != nil {
		return 0
	}
	a.buf.mu.Lock()
	defer a.buf.mu.Unlock()
	return a.buf.holds
}
