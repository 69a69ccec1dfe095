package sim

import (
	"fmt"
	"sync"
	"time"

	"github.com/cuarray/cuarray/device/driver"
)

// mark is one recording of an event: done closes when the stream reaches it.
type mark struct {
	done  chan struct{}
	at    time.Time
	clock vclock     // the recording stream's clock, for the stream race checker
	pools *poolClock // the recording stream's clock for the stream-ordered pools (mempool.go)
	// logical is the recording stream's work up to the recording, which the
	// host has synchronized with once it sees the recording complete
	// (managed_host.go).
	logical uint64

	// Set by the recording stream before done closes (stream.markErr):
	s      *stream
	err    error  // the first error of the stream's work since the recording before
	errGen uint64 // the stream's errGen when err is also the stream's error, else 0
}

func (m *mark) complete() { m.completeAt(time.Now()) }

// completeAt completes m as reached at t: for a recording, the time the
// stream's model says the stream reached it (its clock's startAt), as a
// GPU stamps an event with the device's time, so that a late wake-up of
// the stream's goroutine does not shorten or lengthen what Elapsed measures.
func (m *mark) completeAt(t time.Time) {
	m.at = t
	close(m.done)
}

// event is a point in a stream. Until first recorded it counts as complete.
type event struct {
	d      *Device
	mu     sync.Mutex
	cur    *mark
	closed bool
}

var _ driver.Event = (*event)(nil)

// NewEvent returns an event that is complete until first recorded.
func (d *Device) NewEvent() (driver.Event, error) {
	if d.isClosed.Load() {
		return nil, fmt.Errorf("sim: new event: %w", driver.ErrClosed)
	}
	if err := d.checkFault("new event"); err != nil {
		return nil, err
	}
	m := &mark{done: make(chan struct{})}
	m.complete()
	return &event{d: d, cur: m}, nil
}

// arm starts a new recording.
func (e *event) arm(clock vclock) (*mark, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, fmt.Errorf("sim: record event: %w", driver.ErrClosed)
	}
	e.cur = &mark{done: make(chan struct{}), clock: clock}
	return e.cur, nil
}

func (e *event) latest() *mark {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

// Synchronize waits for the latest recording to complete; after a fault it
// returns the fault, once the work before the recording has stopped (the
// work behind the fault fails at once). It returns the first error of the
// recording stream's work between the recording before (of any event) and
// this one, at every call; the stream's Synchronize then does not report
// that error again, as it would have.
func (e *event) Synchronize() error {
	m := e.latest()
	<-m.done
	if e.d.check != nil {
		e.d.check.hostWaitsForEvent(m.clock)
	}
	if m.pools != nil {
		e.d.pools.synchronized(nil, m.pools)
	}
	m.hostSynchronized()
	if err := e.d.checkFault("event synchronize"); err != nil {
		return err
	}
	if m.err != nil {
		m.s.reported(m.errGen)
		return m.err
	}
	return nil
}

// Query reports whether the latest recording has completed.
//
// After a fault (Device.FailFault) it reports the fault once its stream
// has passed the recording, which happens at once unless work that was
// running when the device faulted is still under way: a caller that lets
// go of memory on the query's word never does so under running work.
func (e *event) Query() (bool, error) {
	m := e.latest()
	select {
	case <-m.done:
		if err := e.d.checkFault("event query"); err != nil {
			return false, err
		}
		if e.d.check != nil {
			e.d.check.hostWaitsForEvent(m.clock)
		}
		m.hostSynchronized()
		return true, nil
	default:
		return false, nil
	}
}

// Elapsed returns the time from start's completion to e's; both must have
// completed, else the error wraps driver.ErrNotReady.
func (e *event) Elapsed(start driver.Event) (time.Duration, error) {
	s, ok := start.(*event)
	if !ok || s.d != e.d {
		return 0, fmt.Errorf("sim: elapsed: the start event is not from this device: %w", driver.ErrInvalidValue)
	}
	if err := e.d.checkFault("elapsed"); err != nil {
		return 0, err
	}
	a, b := s.latest(), e.latest()
	for _, m := range []*mark{a, b} {
		select {
		case <-m.done:
		default:
			return 0, fmt.Errorf("sim: elapsed: %w", driver.ErrNotReady)
		}
	}
	return b.at.Sub(a.at), nil
}

// Close releases the event; recording it afterwards is an error.
func (e *event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}
