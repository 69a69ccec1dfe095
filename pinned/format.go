package pinned

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
)

// The String and GoString methods below describe buffers and pools in a
// line, never their bytes. They do not wait for a lock (errors made while
// one is held print the buffer) and never call into the driver: a closed
// device is found by its Closed method alone.

// String describes the buffer: "pinned 8192 bytes (mapped) at
// 0x7f3a00000000 on sim:0", "registered" for memory page-locked by
// Register, with "from a pool", "freed" or "device closed" where they
// apply. A nil or zero Buffer is "pinned <nil>".
func (b *Buffer) String() string {
	if b.valid() != nil {
		return "pinned <nil>"
	}
	how := "pinned"
	if b.registered {
		how = "registered"
	}
	s := fmt.Sprintf("%s %d bytes%s", how, b.n, flagNote(b.mem.Flags))
	var notes []string
	if b.pool != nil {
		notes = append(notes, "from a pool")
	}
	dead, addr := error(nil), ""
	if b.mu.TryLock() {
		if dead = b.dead; dead == nil {
			addr = fmt.Sprintf(" at %#x", uintptr(unsafe.Pointer(unsafe.SliceData(b.mem.Bytes))))
		}
		b.mu.Unlock()
	}
	switch {
	case dead == errDeviceClosed || closedNow(b.dev):
		notes = append(notes, "device closed")
	case dead != nil:
		notes = append(notes, "freed")
	default:
		s += addr
	}
	s += " on " + b.dev.DeviceID().String()
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*pinned.Buffer)(0xc000123400) /* pinned 8192 bytes ... */".
func (b *Buffer) GoString() string { return goString("*pinned.Buffer", b, b.String()) }

// String describes the pool: "pinned pool (mapped) on sim:0: 1.00 MiB in
// 1 buffer handed out, 2.00 MiB cached", with "closed" once it or its
// device was closed, "busy" while another call holds it (Close waits for
// copies, Alloc for the driver).
func (p *Pool) String() string {
	if p.valid() != nil {
		return "pinned pool <nil>"
	}
	s := fmt.Sprintf("pinned pool%s on %v", flagNote(p.flags), p.dev.DeviceID())
	if !p.mu.TryLock() {
		return s + " (busy)"
	}
	st, closed := p.st, p.closed || p.gone
	p.mu.Unlock()
	if closed || closedNow(p.dev) {
		return s + " (closed)"
	}
	buffers := "buffers"
	if st.Live == 1 {
		buffers = "buffer"
	}
	return fmt.Sprintf("%s: %s in %d %s handed out, %s cached", s,
		accounting.FormatBytes(st.InUse), st.Live, buffers, accounting.FormatBytes(st.Cached))
}

// GoString is String in fmt's form of a pointer, for %#v.
func (p *Pool) GoString() string { return goString("*pinned.Pool", p, p.String()) }

// flagNote is " (mapped)" for flags, "" for none.
func flagNote(f Flags) string {
	if f == 0 {
		return ""
	}
	return " (" + f.String() + ")"
}

// closedNow reports whether the device says it was closed; a device that
// cannot say is taken as open (deviceClosed would ask the driver).
func closedNow(dev any) bool {
	c, ok := dev.(closedReporter)
	return ok && c.Closed()
}

// goString writes p as fmt's %#v writes a pointer inside a value, with a
// description after it as a comment.
func goString(typ string, p any, desc string) string {
	addr := fmt.Sprintf("%p", p)
	if addr == "0x0" {
		return "(" + typ + ")(nil)"
	}
	return "(" + typ + ")(" + addr + ") /* " + desc + " */"
}
