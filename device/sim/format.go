package sim

import (
	"fmt"
	"strings"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// The String and GoString methods below describe a device, its streams
// and its events in a line. They read only what does not change, atomic
// counters and channels, never the device memory, never the device's
// locks, so they are safe on a closed device, during any operation, and
// from inside one.

// String describes the device: "sim:0 (4.00 GiB, 12.00 MiB in use)",
// with the options that change how it behaves (latency, check=streams,
// maphost=false, link) and "faulted" after a fault, or "sim:0 (closed)".
// The bytes in use are its ledger's device bytes.
func (d *Device) String() string {
	if d == nil {
		return "sim.Device(nil)"
	}
	id := d.DeviceID().String()
	if d.Closed() {
		return id + " (closed)"
	}
	parts := []string{
		accounting.FormatBytes(d.cfg.Memory),
		accounting.FormatBytes(d.ledger.Current(accounting.Device)) + " in use",
	}
	if d.cfg.Latency > 0 {
		parts = append(parts, "latency "+d.cfg.Latency.String())
	}
	if d.check != nil {
		parts = append(parts, "check=streams")
	}
	if d.cfg.NoMapHost {
		parts = append(parts, "maphost=false")
	}
	if l := d.cfg.Link; l != nil {
		parts = append(parts, fmt.Sprintf("link %g/%g GB/s", l.PinnedGBps, l.PageableGBps))
		if l.DeviceFaultService > 0 || l.HostFaultService > 0 {
			parts = append(parts, fmt.Sprintf("faults %v/%d, %v/host fault", l.DeviceFaultService, FaultBatch, l.HostFaultService))
		}
	}
	if d.Fault() != nil {
		parts = append(parts, "faulted")
	}
	return id + " (" + strings.Join(parts, ", ") + ")"
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*sim.Device)(0xc000123400) /* sim:0 (4.00 GiB, 0 B in use) */".
func (d *Device) GoString() string {
	return goString("*sim.Device", d, d.String())
}

// String describes the stream: "sim:0 stream 0x100", with "default" for
// the legacy default stream, "borrowed" for one ExternalStream returned,
// the operations still queued, and "closed" once Close has returned.
func (s *stream) String() string {
	if s == nil {
		return "sim stream(nil)"
	}
	return s.describe("")
}

// GoString is String in fmt's form of a pointer, for %#v.
func (s *stream) GoString() string { return goString("*sim.stream", s, s.String()) }

// String describes a stream of another owner; see stream.String.
func (s borrowedStream) String() string {
	if s.stream == nil {
		return "sim stream(nil)"
	}
	return s.describe("borrowed")
}

// GoString describes the stream for %#v.
func (s borrowedStream) GoString() string {
	return goString("sim.borrowedStream", s.stream, s.String())
}

// String describes the per-thread default stream; see stream.String.
func (s perThreadStream) String() string {
	if s.stream == nil {
		return "sim stream(nil)"
	}
	return s.describe("per-thread default")
}

// GoString describes the stream for %#v.
func (s perThreadStream) GoString() string {
	return goString("sim.perThreadStream", s.stream, s.String())
}

func (s *stream) describe(how string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v stream %#x", s.d.DeviceID(), s.handle)
	var notes []string
	switch {
	case how != "":
		notes = append(notes, how)
	case s.handle == driver.LegacyDefaultStream:
		notes = append(notes, "default")
	}
	select {
	case <-s.done:
		notes = append(notes, "closed")
	default:
		if n := s.pending.Load(); n > 0 {
			notes = append(notes, fmt.Sprintf("%d queued", n))
		}
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	return b.String()
}

// String describes the event: "sim:0 event (complete)", "(pending)" while
// its latest recording has not been reached, or "(closed)".
func (e *event) String() string {
	if e == nil {
		return "sim event(nil)"
	}
	e.mu.Lock() // held only for a few assignments
	m, closed := e.cur, e.closed
	e.mu.Unlock()
	state := "complete"
	select {
	case <-m.done:
	default:
		state = "pending"
	}
	if closed {
		state = "closed"
	}
	return fmt.Sprintf("%v event (%s)", e.d.DeviceID(), state)
}

// GoString is String in fmt's form of a pointer, for %#v.
func (e *event) GoString() string { return goString("*sim.event", e, e.String()) }

// goString writes p as fmt's %#v writes a pointer inside a value, with a
// description after it as a comment.
func goString(typ string, p any, desc string) string {
	addr := fmt.Sprintf("%p", p)
	if addr == "0x0" {
		return "(" + typ + ")(nil)"
	}
	return "(" + typ + ")(" + addr + ") /* " + desc + " */"
}
