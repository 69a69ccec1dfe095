package transfer

import (
	"errors"

	"github.com/cuarray/cuarray/device/driver"
)

// maxPooledEvents bounds the events a Copier keeps for its async copies.
const maxPooledEvents = 64

// event returns an event for an async copy to record after it: one an
// earlier copy finished with, or a new one. Reusing them spares a small
// copy two driver calls (create, destroy) and their context switches.
func (c *Copier) event() (driver.Event, error) {
	c.mu.Lock()
	if n := len(c.events); n > 0 {
		ev := c.events[n-1]
		c.events = c.events[:n-1]
		c.mu.Unlock()
		return ev, nil
	}
	c.mu.Unlock()
	return c.dev.NewEvent()
}

// putEvent takes back the event of a copy that has completed; one that
// may not have (the copy failed) is closed instead, and so is one past the
// pool's bound or after Close.
func (c *Copier) putEvent(ev driver.Event, completed bool) error {
	c.mu.Lock()
	if completed && !c.closed && len(c.events) < maxPooledEvents {
		c.events = append(c.events, ev)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return ev.Close()
}

// closeEvents closes the pooled events (Close).
func (c *Copier) closeEvents() error {
	c.mu.Lock()
	evs := c.events
	c.events = nil
	c.mu.Unlock()
	var errs []error
	for _, ev := range evs {
		errs = append(errs, ev.Close())
	}
	return errors.Join(errs...)
}
