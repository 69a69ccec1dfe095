package pinned

import (
	"errors"
	"fmt"
)

// Pending is asynchronous work that uses a buffer's memory: an async copy
// of package transfer. Done reports whether it has finished, and once it
// reports true it must keep doing so; Wait blocks until it has.
type Pending interface {
	Done() (bool, error)
	Wait() error
}

// Guard records that p uses the buffer: Free returns ErrBusy, and a pool
// does not hand the memory out again, until p is done. A freed buffer
// returns ErrFreed.
func (b *Buffer) Guard(p Pending) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return fmt.Errorf("pinned: guard: %w", ErrFreed)
	}
	b.pending = append(b.pending, p)
	return nil
}

// Busy reports whether async work guarding the buffer is still running.
func (b *Buffer) Busy() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.settle()
}

// settle drops the finished pending work and reports whether any is left,
// with the first error a query returned. The caller holds b.mu.
func settle(pending []Pending) ([]Pending, error) {
	var errs []error
	left := pending[:0]
	for _, p := range pending {
		done, err := p.Done()
		if err != nil {
			errs = append(errs, err)
		}
		if !done {
			left = append(left, p)
		}
	}
	clear(pending[len(left):])
	return left, errors.Join(errs...)
}

func (b *Buffer) settle() (bool, error) {
	var err error
	b.pending, err = settle(b.pending)
	return len(b.pending) > 0, err
}

// Free frees the buffer: memory from Alloc goes back to the driver,
// memory from a Pool back to the pool, registered memory is unregistered
// (Free is then Unregister). While an async copy still uses memory from
// Alloc or Register, Free frees nothing and returns ErrBusy; a pool takes
// the buffer back at once and waits for the copy before reusing it.
// Free is idempotent.
func (b *Buffer) Free() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil
	}
	if b.pool != nil {
		b.freed = true
		b.pool.put(b.mem, b.n, b.pending)
		b.pending = nil
		return nil
	}
	busy, err := b.settle()
	if busy {
		return fmt.Errorf("pinned: free %v: %d async copies still use it: %w", b, len(b.pending), ErrBusy)
	}
	if err != nil {
		return fmt.Errorf("pinned: free %v: %w", b, err)
	}
	if b.registered {
		err = b.dev.Unregister(b.mem)
		b.pinner.Unpin()
		registry.Delete(b)
	} else {
		err = b.dev.HostFree(b.mem)
	}
	b.freed = true
	if err != nil {
		return fmt.Errorf("pinned: free: %w", err)
	}
	return nil
}
