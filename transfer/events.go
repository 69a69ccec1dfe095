package transfer

import "github.com/cuarray/cuarray/device/driver"

// event returns an event for an async copy to record after it: one an
// earlier copy finished with, or a new one (driver.EventPool).
func (c *Copier) event() (driver.Event, error) { return c.events.Get(c.dev) }

// putEvent takes back the event of a copy that has completed; one that
// may not have (the copy failed) is closed instead, and so is one past the
// pool's bound or after Close.
func (c *Copier) putEvent(ev driver.Event, completed bool) error {
	return c.events.Put(ev, completed)
}

// closeEvents closes the pooled events (Close).
func (c *Copier) closeEvents() error { return c.events.Close() }
