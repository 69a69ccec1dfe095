package transfer

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Op is an async copy in flight. It keeps the copy's memory alive until the
// copy has completed: Go slices stay referenced, the pinned buffers it
// uses refuse Free until then (pinned.ErrBusy), and the device arrays it
// reads or writes are held (devarray.Hold): a Free of one of them while
// the copy is queued marks it freed at once and gives its memory back
// only when the copy has completed and the Op has ended (Wait, a Done that
// reports true, or the Copier reaping it at its next CopyAsync or Close),
// so a new allocation can never receive bytes the copy still writes.
// Wait for it, or poll Done, before touching the destination.
type Op struct {
	c    *Copier
	s    driver.Stream
	ev   driver.Event  // recorded on s after the copy; nil for one run on a goroutine
	done chan struct{} // closed when the goroutine of a staged or direct copy returns
	x    *exec

	mu       sync.Mutex
	finished bool // its memory is let go
	synced   bool // the errors of its stream's work up to it are collected (Wait)
	err      error
	keep     []Endpoint     // the memory the copy uses, held until it is done
	holds    []func() error // releases the Holds on its device arrays
}

// CopyAsync queues a copy of src into dst on stream s and returns at once
// with the Op that tracks it. Copies on one stream happen in the order
// they were queued. It does not wait for the device's work, whatever the
// host memory (async_path.go): pageable memory, which a driver copy would
// wait for, goes through the staged ring where the planner would pick the
// direct path, and a copy that asks for the direct path runs on a
// goroutine of the copier's. The pinned, mapped and d2d paths are queued
// on s itself. A staged copy is driven by goroutines through the copier's
// ring, its DMAs queued on s behind s's earlier work as each chunk is
// gathered; a copy queued on s behind a staged copy that is still running
// waits for it before CopyAsync returns. Other work queued on s directly
// does not wait for a staged copy: Wait for its Op first. A peer copy
// waits for s and runs at once.
func (c *Copier) CopyAsync(s driver.Stream, dst, src Endpoint, opts ...Option) (*Op, error) {
	if s == nil {
		return nil, fmt.Errorf("transfer: copy async: no stream (use Copy for a synchronous copy): %w", driver.ErrInvalidValue)
	}
	if c == nil {
		return nil, fmt.Errorf("transfer: copy async: nil Copier; make one with New: %w", driver.ErrInvalidValue)
	}
	j, err := c.prepare(dst, src, opts)
	if err != nil {
		return nil, err
	}
	asyncPath(j)
	if err := c.begin(); err != nil {
		return nil, err
	}
	defer c.busy.Done() // after the op is in c.ops, where Close finds it
	c.reap()
	c.mu.Lock()
	prev := c.staged[s]
	c.mu.Unlock()
	op := &Op{c: c, s: s, x: &exec{dev: c.dev, s: s, k: c.kernels}, keep: []Endpoint{dst, src}}
	j.pend = op
	for _, e := range op.keep {
		switch e.side {
		case InPinned:
			if err := e.buf.Guard(op); err != nil {
				return nil, op.fail(fmt.Errorf("transfer: copy async: %w", err))
			}
		case OnDevice:
			release, err := e.arr.Hold()
			if err != nil {
				return nil, op.fail(fmt.Errorf("transfer: copy async: %w", err))
			}
			op.holds = append(op.holds, release)
		}
	}
	if onGoroutine(j) {
		// The copy runs on a goroutine after CopyAsync has returned: a
		// Free of a device array meanwhile marks it freed, and kernels
		// refuse a freed array, though op's Hold keeps its memory. The
		// goroutine works on a borrowed view of the held memory instead.
		for _, e := range []*Endpoint{&j.dst, &j.src} {
			if e.side == OnDevice {
				a, err := borrowHeld(e.arr)
				if err != nil {
					return nil, op.fail(fmt.Errorf("transfer: copy async: %w", err))
				}
				e.arr = a
			}
		}
		op.done = make(chan struct{})
		c.mu.Lock()
		c.staged[s] = op
		c.mu.Unlock()
		go func() {
			defer close(op.done)
			if prev != nil {
				<-prev.done
			}
			err := j.run(op.x)
			if err == nil && pageableDirect(j) {
				err = passed(c.dev, s)
			}
			op.mu.Lock()
			op.err = err
			op.mu.Unlock()
		}()
	} else {
		if prev != nil {
			<-prev.done
		}
		ev, err := c.event()
		if err != nil {
			return nil, op.fail(err)
		}
		// The copy and the record of its event after it share a context
		// switch.
		err = batched(s, func(bs driver.Stream) error {
			op.x.s = bs
			defer func() { op.x.s = s }()
			if err := j.run(op.x); err != nil {
				return err
			}
			return bs.Record(ev)
		})
		if err != nil {
			// Not recorded, the event would read as complete: Done never
			// sees it. fail waits for what was queued; then it is closed.
			return nil, errors.Join(op.fail(err), c.putEvent(ev, false))
		}
		// Only now may Done see the event (a buffer's Free may call it
		// meanwhile: the copy's memory is guarded by op already): one not
		// yet recorded reads as complete.
		op.mu.Lock()
		op.ev = ev
		op.mu.Unlock()
	}
	c.mu.Lock()
	c.ops[op] = struct{}{}
	c.mu.Unlock()
	return op, nil
}

// borrowHeld returns a view of a's memory that a Free of a does not mark
// freed; the caller holds the memory (devarray.Hold) while it uses it.
func borrowHeld(a *devarray.DevArray) (*devarray.DevArray, error) {
	d, err := a.Descriptor()
	if err != nil {
		return nil, err
	}
	lo, hi := a.Extent()
	return devarray.Wrap(a.Backend(), d, devarray.WithBounds(d.Ptr+devarray.Ptr(lo), hi-lo))
}

// fail ends an op whose queueing failed: it waits for what was queued and
// frees the temporaries.
func (op *Op) fail(err error) error {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.finished = true
	return errors.Join(err, op.s.Synchronize(), op.release(false))
}

// Done reports whether the copy has completed, without waiting, and lets
// go of its memory once it has. An error of the copy's work on its stream
// is reported by Wait, which collects it. Once the device can run nothing
// more (its context hit a sticky fault, driver.ErrContextFailed, or it
// was closed) the copy is over: Done reports true with that error, so a
// loop polling Done ends.
func (op *Op) Done() (bool, error) {
	if op == nil {
		return false, fmt.Errorf("transfer: done: nil Op: %w", driver.ErrInvalidValue)
	}
	op.mu.Lock()
	if op.finished {
		err := op.err
		op.mu.Unlock()
		return true, err
	}
	ev := op.ev
	op.mu.Unlock()
	if op.done == nil && ev == nil {
		return false, nil // still being queued (a buffer it guards asks): not done
	}
	if op.done != nil {
		select {
		case <-op.done:
		default:
			return false, nil
		}
	} else if ok, err := ev.Query(); err != nil || !ok {
		if over(err) {
			// The copy never completes, and nothing runs on the device any
			// more: the op is over, with the error. Reporting false would
			// keep a caller polling Done (and a pinned buffer's Free,
			// which polls it) waiting for ever.
			return true, op.finish(false, err)
		}
		op.mu.Lock()
		defer op.mu.Unlock()
		if op.finished { // another goroutine finished it (and closed the event) meanwhile
			return true, op.err
		}
		return false, err
	}
	return true, op.finish(false, nil)
}

// over reports whether err, from a query of a device, means that nothing
// runs on the device any more: its context hit a sticky fault (an illegal
// address, a launch failure: every later call fails), or it was closed.
func over(err error) bool {
	return errors.Is(err, driver.ErrContextFailed) || errors.Is(err, driver.ErrClosed)
}

// Wait waits until the copy has completed and returns its error, or the
// first error of the work queued on its stream before it that no wait for
// an earlier event of the stream reported. A copy queued on the stream is
// waited for through the event recorded after it, which costs the driver
// one call on a thread with a context current ("cuEventSynchronize ...
// may also return error codes from previous, asynchronous launches").
func (op *Op) Wait() error {
	if op == nil {
		return fmt.Errorf("transfer: wait: nil Op: %w", driver.ErrInvalidValue)
	}
	op.mu.Lock()
	if op.finished && (op.synced || op.done != nil) {
		err := op.err
		op.mu.Unlock()
		return err
	}
	op.mu.Unlock()
	if op.done != nil {
		<-op.done
	}
	return op.finish(true, nil)
}

// finish ends the op once its work is done, or once the device can no
// longer do it (cause, the error that said so): with sync it also waits
// for the copy (waitQueued: to report the errors of the queued work).
func (op *Op) finish(sync bool, cause error) error {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.finished {
		if sync && !op.synced && op.done == nil {
			// Done let its memory go; Wait still owes its stream's errors.
			op.synced = true
			op.err = errors.Join(op.err, op.s.Synchronize())
		}
		return op.err
	}
	var errs []error
	errs = append(errs, op.err, cause)
	completed := cause == nil // Done saw the event complete, or Wait waited for it
	if sync && op.done == nil {
		err := op.waitQueued()
		completed = completed && err == nil
		errs = append(errs, err)
		op.synced = true
	}
	errs = append(errs, op.release(completed))
	op.err = errors.Join(errs...)
	op.finished = true
	op.c.mu.Lock()
	delete(op.c.ops, op)
	if op.c.staged[op.s] == op {
		delete(op.c.staged, op.s)
	}
	op.c.mu.Unlock()
	return op.err
}

// waitQueued waits for a copy queued on op's stream: for the event after
// it, which reports the errors of the stream's work before it and needs no
// switch of the thread's context, or for the stream when there is none.
func (op *Op) waitQueued() error {
	if op.ev != nil {
		return op.ev.Synchronize()
	}
	return op.s.Synchronize()
}

// release frees the op's temporaries and event and lets go of its memory.
// The caller holds op.mu.
func (op *Op) release(completed bool) error {
	var errs []error
	errs = append(errs, op.x.finish())
	if op.ev != nil {
		errs = append(errs, op.c.putEvent(op.ev, completed))
		op.ev = nil
	}
	for _, release := range op.holds {
		errs = append(errs, release())
	}
	op.holds = nil
	op.keep = nil
	return errors.Join(errs...)
}

// reap ends the ops that have completed, so that their memory is let go
// even when nobody waits for them.
func (c *Copier) reap() {
	c.mu.Lock()
	ops := make([]*Op, 0, len(c.ops))
	for op := range c.ops {
		ops = append(ops, op)
	}
	c.mu.Unlock()
	for _, op := range ops {
		_, _ = op.Done()
	}
}
