package kernel

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/device/driver"
)

// Op is a kernel launch in flight (LaunchAsync): it keeps the launch's
// arrays allocated until the kernel is done.
type Op struct {
	m *Module
	s driver.Stream

	mu       sync.Mutex
	ev       driver.Event // recorded on s after the kernel; nil once the Op lets it go
	holds    []func() error
	released bool // the arrays are let go: the kernel is done, or never ran
	synced   bool // Wait has collected the stream's errors
	err      error
}

// Wait waits until the kernel and the work queued on its stream before it
// are done, lets its arrays go, and returns the stream's first error (the
// kernel's fault, a write into an In array on sim). Waiting twice returns
// the same error.
func (op *Op) Wait() error {
	if op == nil {
		return fmt.Errorf("kernel: wait: nil Op: %w", driver.ErrInvalidValue)
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.synced {
		return op.err
	}
	op.synced = true
	err := op.s.Synchronize()
	op.err = errors.Join(op.err, err, op.releaseLocked())
	op.dropEvent(err == nil)
	return op.err
}

// Done reports whether the kernel is done, without waiting; once it is,
// the arrays are let go. Its error is the device's; the kernel's own
// error is the stream's, which Wait returns. The first Done of a launch
// that no event follows records one on its stream (the work queued there
// since counts too: Done may say false a while longer than it must).
func (op *Op) Done() (bool, error) {
	if op == nil {
		return false, fmt.Errorf("kernel: done: nil Op: %w", driver.ErrInvalidValue)
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.released {
		return true, nil
	}
	if op.ev == nil {
		ev, err := op.m.event()
		if err != nil {
			return false, err
		}
		if err := op.s.Record(ev); err != nil {
			ev.Close()
			return false, err
		}
		op.ev = ev
	}
	done, err := op.ev.Query()
	if err != nil || !done {
		return false, err
	}
	err = op.releaseLocked()
	op.dropEvent(true)
	return true, err
}

// settle waits for the kernel's event, if the Op has not let its arrays go
// yet, and lets them go (Module.Close): a failed wait means the device can
// no longer run it (a fault, a closed stream or device), whose error is
// the stream's.
func (op *Op) settle() error {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.released {
		return nil
	}
	var failed error
	if op.ev != nil {
		failed = op.ev.Synchronize()
	} else {
		failed = op.s.Synchronize()
	}
	err := op.releaseLocked()
	op.dropEvent(failed == nil)
	return err
}

// release lets the arrays go (a launch that never started).
func (op *Op) release() error {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.releaseLocked()
}

func (op *Op) releaseLocked() error {
	if op.released {
		return nil
	}
	op.released = true
	var errs []error
	for _, r := range op.holds {
		errs = append(errs, r())
	}
	op.holds = nil
	return errors.Join(errs...)
}

// dropEvent gives the Op's event back to the module for reuse (done: it
// has completed) or closes it.
func (op *Op) dropEvent(done bool) {
	if op.ev == nil {
		return
	}
	if done {
		op.m.putEvent(op.ev)
	} else {
		op.ev.Close()
	}
	op.ev = nil
}

// reapEvery is how many async launches on a stream an event follows: at
// each, the module asks whether the event reapEvery launches before is
// done, and with it, in stream order, every launch before.
const reapEvery = 64

// streamOps are a stream's async launches whose arrays are not let go yet,
// oldest first, and how many launches the stream has had.
type streamOps struct {
	ops      []*Op
	launches int
}

// marks reports whether the next async launch on s is one an event follows.
func (m *Module) marks(s driver.Stream) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pending[s] != nil && (m.pending[s].launches+1)%reapEvery == 0
}

// track adds op to its stream's launches. When an event follows op, it
// asks whether the previous such event is done, and if so lets every
// launch up to that one go.
func (m *Module) track(op *Op) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("kernel: launch: the module is closed: %w", driver.ErrClosed)
	}
	so := m.pending[op.s]
	if so == nil {
		so = &streamOps{}
		m.pending[op.s] = so
	}
	so.launches++
	so.ops = append(so.ops, op)
	var prev *Op
	if op.ev != nil {
		for i := len(so.ops) - 2; i >= 0; i-- {
			if so.ops[i].ev != nil {
				prev = so.ops[i]
				break
			}
		}
	}
	m.mu.Unlock()
	if prev == nil {
		return nil
	}
	if done, err := prev.Done(); err != nil || !done {
		return nil // left for Wait, a later check or Close
	}
	m.mu.Lock()
	var older []*Op
	for i, o := range so.ops {
		if o == prev {
			older = append(older, so.ops[:i+1]...)
			so.ops = so.ops[i+1:]
			break
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, o := range older {
		o.mu.Lock()
		errs = append(errs, o.releaseLocked())
		o.dropEvent(true)
		o.mu.Unlock()
	}
	return errors.Join(errs...)
}

// event returns an event for an Op: a reused one, else a new one.
func (m *Module) event() (driver.Event, error) { return m.events.Get(m.dev) }

// putEvent keeps a completed Op's event for the next.
func (m *Module) putEvent(ev driver.Event) { m.events.Put(ev, true) }
