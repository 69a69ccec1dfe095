package transfer

import (
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
)

// The String and GoString methods below describe copiers, copies and
// endpoints in a line, never the bytes of host memory. They do not wait
// for a lock (an Op's is held while it waits for its stream) and do not
// call the device.

// String describes the copier: "copier on sim:0 (staging ring 4 × 4.00 MiB
// on 2 streams, 1 copy in flight)", "closed" once Close has begun, "busy"
// while another call holds its lock.
func (c *Copier) String() string {
	if c == nil || c.dev == nil {
		return "copier <nil>"
	}
	s := fmt.Sprintf("copier on %v (staging ring %d × %s on %d streams", c.dev.DeviceID(),
		c.opt.Chunks, accounting.FormatBytes(c.opt.ChunkBytes), c.opt.Streams)
	if !c.mu.TryLock() {
		return s + ", busy)"
	}
	closed, ops := c.closed, len(c.ops)
	c.mu.Unlock()
	switch {
	case closed:
		s += ", closed"
	case ops == 1:
		s += ", 1 copy in flight"
	case ops > 1:
		s += fmt.Sprintf(", %d copies in flight", ops)
	}
	return s + ")"
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*transfer.Copier)(0xc000123400) /* copier on sim:0 (...) */".
func (c *Copier) GoString() string { return goString("*transfer.Copier", c, c.String()) }

// String describes the copy: "copy on stream 0x100 of sim:0: pageable
// float32 [512 512] ... to device DevArray(...) (in flight)", then "done"
// or "failed: ..." once Done or Wait saw it end (which lets go of its
// endpoints), "busy" while Wait holds it.
func (op *Op) String() string {
	if op == nil || op.c == nil || op.s == nil {
		return "copy <nil>"
	}
	s := fmt.Sprintf("copy on stream %#x of %v", op.s.Handle(), op.c.dev.DeviceID())
	if !op.mu.TryLock() {
		return s + " (busy)"
	}
	finished, err, keep := op.finished, op.err, op.keep
	op.mu.Unlock()
	switch {
	case finished && err != nil:
		return fmt.Sprintf("%s (failed: %v)", s, err)
	case finished:
		return s + " (done)"
	case len(keep) == 2:
		return fmt.Sprintf("%s: %v to %v (in flight)", s, keep[1], keep[0])
	}
	return s + " (in flight)"
}

// GoString is String in fmt's form of a pointer, for %#v.
func (op *Op) GoString() string { return goString("*transfer.Op", op, op.String()) }

// String describes the endpoint without its bytes: "device
// DevArray(float32 [512 512] on sim:0 ...)", "pageable float32 [512 512]
// in 1.00 MiB at 0xc000180000", "pinned uint8 [4096] in pinned 4096 bytes
// ...", or "invalid endpoint: ..." for one made with an error.
func (e Endpoint) String() string {
	switch {
	case e.err != nil:
		return fmt.Sprintf("invalid endpoint: %v", e.err)
	case e.arr == nil:
		return "endpoint <nil>"
	case e.side == OnDevice:
		return "device " + e.arr.String()
	}
	s := fmt.Sprintf("%v %v %v", e.side, e.arr.DType(), e.arr.Shape())
	if !e.arr.IsContiguous() {
		s += fmt.Sprintf(" strides %v", e.arr.Strides())
	}
	if e.buf != nil {
		return s + " in " + e.buf.String()
	}
	return fmt.Sprintf("%s in %s at %#x", s, accounting.FormatBytes(int64(len(e.mem))), uintptr(unsafe.Pointer(unsafe.SliceData(e.mem))))
}

// GoString writes the endpoint for %#v as a literal with String as a
// comment: its host memory would be printed byte by byte otherwise.
func (e Endpoint) GoString() string { return "transfer.Endpoint{ /* " + e.String() + " */ }" }

// goString writes p as fmt's %#v writes a pointer inside a value, with a
// description after it as a comment.
func goString(typ string, p any, desc string) string {
	addr := fmt.Sprintf("%p", p)
	if addr == "0x0" {
		return "(" + typ + ")(nil)"
	}
	return "(" + typ + ")(" + addr + ") /* " + desc + " */"
}
