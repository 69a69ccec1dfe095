package devarray

import (
	"fmt"
	"strings"
	"unsafe"
)

// The String and GoString methods below describe arrays and host memory
// in a line, without their contents: fmt would otherwise print a Place's
// or a HostStrided's host memory byte by byte.

// String describes the array without touching its memory or waiting for a
// lock: "DevArray(float32 [512 512] on sim:0 at 0x7f3a00000000, strides
// [2048 4], owned)", with "view" or "borrowed" for the others, and
// "readonly", "freed" (after Free) or "device closed" where they apply.
// A nil or zero DevArray is "DevArray(nil)".
func (a *DevArray) String() string {
	if a.check() != nil {
		return "DevArray(nil)"
	}
	notes := []string{"owned"}
	switch {
	case a.view:
		notes[0] = "view"
	case !a.buf.owned:
		notes[0] = "borrowed"
	}
	if a.readonly {
		notes = append(notes, "readonly")
	}
	// The buffer's lock is held only briefly, but it is held while errors
	// that print the array are made (Hold's): a String that waited for it
	// would wait for itself. When it is taken, the state is left out.
	if a.buf.mu.TryLock() {
		freed := a.buf.freed
		a.buf.mu.Unlock()
		if freed {
			notes = append(notes, "freed")
		}
	}
	if c, ok := a.buf.backend.(interface{ Closed() bool }); ok && c.Closed() {
		notes = append(notes, "device closed")
	}
	return fmt.Sprintf("DevArray(%v %v on %v at %v, strides %v, %s)",
		a.dtype, a.lay.shape, a.buf.device, a.Ptr(), a.lay.strides, strings.Join(notes, ", "))
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*devarray.DevArray)(0xc000123400) /* DevArray(float32 [4] ...) */".
func (a *DevArray) GoString() string { return goString("*devarray.DevArray", a, a.String()) }

// String describes the place: "device 0x7f3a00000000" or "host 4096 bytes
// at 0xc000180000".
func (p Place) String() string {
	if p.OnHost() {
		return fmt.Sprintf("host %d bytes at %#x", len(p.Host), bytesAddr(p.Host))
	}
	return "device " + p.Dev.String()
}

// GoString is %#v's Go syntax, with the host bytes as a comment:
// "devarray.Place{Dev:0x0, Host:[]byte{ /* 4096 bytes at 0xc000180000 */ }}".
func (p Place) GoString() string {
	return fmt.Sprintf("devarray.Place{Dev:%#x, Host:%s}", uintptr(p.Dev), goBytes(p.Host))
}

// String describes the layout: "HostStrided(4 bytes × [512 512], strides
// [4 2048], 1048576 bytes at 0xc000180000)".
func (h *HostStrided) String() string {
	if h == nil {
		return "HostStrided(nil)"
	}
	strides := "C-contiguous"
	if h.origStrides != nil {
		strides = fmt.Sprintf("strides %v", h.origStrides)
	}
	return fmt.Sprintf("HostStrided(%d bytes × %v, %s, element 0 at byte %d of %d bytes at %#x)",
		h.item, h.origShape, strides, h.zero, len(h.mem), bytesAddr(h.mem))
}

// GoString is String in fmt's form of a pointer, for %#v.
func (h *HostStrided) GoString() string { return goString("*devarray.HostStrided", h, h.String()) }

// goString writes p as fmt's %#v writes a pointer inside a value, with a
// description after it as a comment.
func goString(typ string, p any, desc string) string {
	addr := fmt.Sprintf("%p", p)
	if addr == "0x0" {
		return "(" + typ + ")(nil)"
	}
	return "(" + typ + ")(" + addr + ") /* " + desc + " */"
}

// goBytes writes a byte slice for a GoString without its contents:
// "[]byte{ /* 4096 bytes at 0xc000180000 */ }", "[]byte(nil)".
func goBytes(b []byte) string {
	if b == nil {
		return "[]byte(nil)"
	}
	return fmt.Sprintf("[]byte{ /* %d bytes at %#x */ }", len(b), bytesAddr(b))
}

func bytesAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
