package pinned

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
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
// returns ErrFreed, one whose device was closed ErrClosed.
func (b *Buffer) Guard(p Pending) error {
	if err := b.valid(); err != nil {
		return fmt.Errorf("pinned: guard: %w", err)
	}
	if p == nil {
		return fmt.Errorf("pinned: guard: no pending work: %w", driver.ErrInvalidValue)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.aliveLocked(); err != nil {
		return fmt.Errorf("pinned: guard: %w", err)
	}
	b.pending = append(b.pending, p)
	return nil
}

// Busy reports whether async work guarding the buffer is still running,
// with the errors of the work that has finished since the last call.
// Nothing runs on a buffer whose device was closed: it returns false and
// an error wrapping ErrClosed.
func (b *Buffer) Busy() (bool, error) {
	if err := b.valid(); err != nil {
		return false, fmt.Errorf("pinned: busy: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead == nil && deviceClosed(b.dev) {
		b.deviceClosedLocked()
	}
	if b.dead == errDeviceClosed {
		return false, fmt.Errorf("pinned: busy: %w", b.dead)
	}
	return b.settle()
}

// settle drops the finished pending work and reports whether any is left,
// with the errors the queries returned. Work whose query fails with
// driver.ErrContextFailed counts as finished: after such a sticky error
// nothing queued on the device runs again, so it will never touch the
// memory (and never report done: a buffer it guarded would stay busy for
// ever). The caller holds b.mu.
func settle(pending []Pending) ([]Pending, error) {
	var errs []error
	left := pending[:0]
	for _, p := range pending {
		done, err := p.Done()
		if err != nil {
			errs = append(errs, err)
		}
		if !done && !errors.Is(err, driver.ErrContextFailed) {
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
//
// Once the async copies are done, Free frees even when one of them
// failed, and returns the failures' errors with its own, once: the
// memory is not kept for an error its copy's Op reports anyway.
//
// Free is idempotent: a freed buffer returns nil. A buffer whose device
// was closed before it was freed returns an error wrapping ErrClosed,
// every time, and frees nothing: the device's Close did. A nil Buffer
// returns nil, a zero one ErrNil.
func (b *Buffer) Free() error {
	if b == nil {
		return nil
	}
	if err := b.valid(); err != nil {
		return fmt.Errorf("pinned: free: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch err := b.aliveLocked(); {
	case err == errDeviceClosed:
		return fmt.Errorf("pinned: free %v: %w", b, err)
	case err != nil:
		return nil
	}
	if b.pool != nil {
		b.dead = ErrFreed
		b.pool.put(b.mem, b.n, b.pending)
		b.pending = nil
		return nil
	}
	busy, failed := b.settle()
	if busy {
		return fmt.Errorf("pinned: free %v: %d async copies still use it: %w", b, len(b.pending), errors.Join(ErrBusy, failed))
	}
	var err error
	if b.registered {
		err = b.dev.Unregister(b.mem)
		b.pinner.Unpin()
		registry.Delete(b)
	} else {
		err = b.dev.HostFree(b.mem)
	}
	b.dead = ErrFreed
	if failed != nil {
		failed = fmt.Errorf("pinned: free %v: freed; an async copy that used it failed: %w", b, failed)
	}
	if err != nil {
		err = fmt.Errorf("pinned: free: %w", err)
	}
	return errors.Join(failed, err)
}
