//go:build cuda && cudaemu && linux

package emulated

import (
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// implicitSync orders the context's streams as the CUDA C++ Programming
// Guide's implicit synchronization says: "Two commands from different
// streams cannot run concurrently if any one of the following operations
// is issued in-between them by the host thread: a page-locked host memory
// allocation, a device memory allocation, a device memory set, ...". It is
// called for cuMemAlloc and cuMemHostAlloc: the work queued later on any
// stream of the context, and on a stream made later, waits for the work
// queued so far on every other stream, non-blocking ones too, so a program
// that needs the two to overlap (a host function that waits for work
// queued after an allocation) deadlocks, as it may on a GPU. That a stream
// made later waits too is the strict reading, a guess. Memsets do not
// count here: on the H100 (driver 580.159.04, 2026-11-27, conformance
// "cuMemsetD8 is asynchronous") a copy on a non-blocking stream queued
// after a cuMemsetD8 completed while the legacy stream before it was held.
// Registration (cuMemHostRegister) is not in the guide's list and does not
// count either, a guess.
func (c *context) implicitSync() cuResult {
	dev := c.active()
	if dev == nil {
		return c.destroyedResult()
	}
	streams := c.everyStream()
	type pending struct {
		from *stream
		ev   driver.Event
	}
	var fence []pending
	kept := false
	defer func() {
		if !kept {
			for _, p := range fence {
				p.ev.Close()
			}
		}
	}()
	for _, s := range streams {
		if sim.Idle(s.s) {
			continue
		}
		ev, err := dev.NewEvent()
		if err != nil {
			return c.codeOf(err)
		}
		fence = append(fence, pending{s, ev})
		if err := s.s.Record(ev); err != nil {
			return c.codeOf(err)
		}
	}
	if len(fence) == 0 {
		return success
	}
	for _, w := range streams {
		for _, p := range fence {
			if p.from.s == w.s {
				continue
			}
			if err := w.s.WaitEvent(p.ev); err != nil {
				return c.codeOf(err)
			}
		}
	}
	// A stream made later waits for the same events (newStreamWaits). The
	// events of the fence before can go: every stream with work left then
	// waits for them, and this fence's events follow that work.
	evs := make([]driver.Event, len(fence))
	for i, p := range fence {
		evs[i] = p.ev
	}
	kept = true
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range c.fence {
		ev.Close()
	}
	c.fence = evs
	return success
}

// newStreamWaits makes a stream just made in the context wait for the work
// that the context's last implicit synchronization fenced (implicitSync).
func (c *context) newStreamWaits(st driver.Stream) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range c.fence {
		if err := st.WaitEvent(ev); err != nil {
			return err
		}
	}
	return nil
}
