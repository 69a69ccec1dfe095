//go:build cuda

package cuda

import (
	"fmt"
	"io"
	"strings"

	"github.com/cuarray/cuarray/accounting"
)

// The String and GoString methods below describe a device, its streams
// and its events in a line. They read what does not change and atomic
// counters, never call the driver (a closed device's context is gone),
// and do not wait for a lock that a driver call may hold.

// String describes the device: "cuda:0 NVIDIA H100 80GB HBM3 (79.19 GiB,
// 12.00 MiB in use)", or "cuda:0 (closed)". The bytes in use are its
// ledger's device bytes.
func (d *Device) String() string {
	if d == nil {
		return "cuda.Device(nil)"
	}
	id := d.DeviceID().String()
	if d.Closed() {
		return id + " (closed)"
	}
	if d.info.Model != "" {
		id += " " + d.info.Model
	}
	return fmt.Sprintf("%s (%s, %s in use)", id, accounting.FormatBytes(d.info.TotalMemory),
		accounting.FormatBytes(d.ledger.Current(accounting.Device)))
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*cuda.Device)(0xc000123400) /* cuda:0 ... */".
func (d *Device) GoString() string { return goString("*cuda.Device", d, d.String()) }

// Format prints the device: String for %v and %s, GoString for %#v, and
// for %+v String followed by its ledger's totals (device memory now and
// at its peak, allocations and frees, bytes and copies each way), as a sim
// device does. It reads counters only, never the driver.
func (d *Device) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, d.GoString())
	case verb == 'v' && f.Flag('+') && d != nil:
		io.WriteString(f, d.String()+" "+d.ledger.Snapshot().Totals())
	case verb == 'v' || verb == 's':
		io.WriteString(f, d.String())
	case verb == 'q':
		fmt.Fprintf(f, "%q", d.String())
	default:
		fmt.Fprintf(f, "%%!%c(*cuda.Device=%s)", verb, d.String())
	}
}

// String describes the stream: "cuda:0 stream 0x5a5a00", with "borrowed"
// for one ExternalStream returned and "closed" after Close.
func (s *stream) String() string {
	if s == nil || s.d == nil {
		return "cuda stream(nil)"
	}
	b := fmt.Sprintf("%v stream %#x", s.d.DeviceID(), s.Handle())
	var notes []string
	if s.borrowed {
		notes = append(notes, "borrowed")
	}
	if s.mu.TryLock() { // held through driver calls: never wait for it
		if s.closed {
			notes = append(notes, "closed")
		}
		s.mu.Unlock()
	}
	if s.d.Closed() {
		notes = append(notes, "device closed")
	}
	if len(notes) > 0 {
		b += " (" + strings.Join(notes, ", ") + ")"
	}
	return b
}

// GoString is String in fmt's form of a pointer, for %#v.
func (s *stream) GoString() string { return goString("*cuda.stream", s, s.String()) }

// String describes the event: "cuda:0 event", "(closed)" after Close.
// Whether it completed is Query's to ask the driver.
func (e *event) String() string {
	if e == nil || e.d == nil {
		return "cuda event(nil)"
	}
	s := e.d.DeviceID().String() + " event"
	if e.mu.TryLock() { // held through driver calls: never wait for it
		if e.closed {
			s += " (closed)"
		}
		e.mu.Unlock()
	}
	return s
}

// GoString is String in fmt's form of a pointer, for %#v.
func (e *event) GoString() string { return goString("*cuda.event", e, e.String()) }

// goString writes p as fmt's %#v writes a pointer inside a value, with a
// description after it as a comment.
func goString(typ string, p any, desc string) string {
	addr := fmt.Sprintf("%p", p)
	if addr == "0x0" {
		return "(" + typ + ")(nil)"
	}
	return "(" + typ + ")(" + addr + ") /* " + desc + " */"
}
