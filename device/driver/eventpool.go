package driver

import (
	"errors"
	"sync"
)

// MaxPooledEvents bounds the events an EventPool keeps.
const MaxPooledEvents = 64

// EventPool keeps the events of completed async work for the next work
// to record: reusing one spares two driver calls (create, destroy) and
// their context switches. The zero EventPool is empty and ready; it is
// safe for concurrent use.
type EventPool struct {
	mu     sync.Mutex
	events []Event
	closed bool
}

// Get returns a pooled event, or a new one of dev.
func (p *EventPool) Get(dev Device) (Event, error) {
	p.mu.Lock()
	if n := len(p.events); n > 0 {
		ev := p.events[n-1]
		p.events = p.events[:n-1]
		p.mu.Unlock()
		return ev, nil
	}
	p.mu.Unlock()
	return dev.NewEvent()
}

// Put takes back an event whose work has completed; one that may not
// have (completed false), one past MaxPooledEvents, or one after Close is
// closed instead.
func (p *EventPool) Put(ev Event, completed bool) error {
	p.mu.Lock()
	if completed && !p.closed && len(p.events) < MaxPooledEvents {
		p.events = append(p.events, ev)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	return ev.Close()
}

// Close closes the pooled events; events put back later are closed too.
func (p *EventPool) Close() error {
	p.mu.Lock()
	evs := p.events
	p.events, p.closed = nil, true
	p.mu.Unlock()
	var errs []error
	for _, ev := range evs {
		errs = append(errs, ev.Close())
	}
	return errors.Join(errs...)
}
