package driver

import (
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
)

// HostMem and HostRange hold page-locked memory as a []byte, which fmt
// would print byte by byte: their String and GoString methods print its
// size and address instead.

// String describes the memory: "page-locked 1.00 MiB (mapped) at
// 0x7f3a00000000, device 0x7f3a00000000", or "page-locked memory (freed)"
// after HostFree or Unregister.
func (h HostMem) String() string {
	if h.Bytes == nil {
		return "page-locked memory (freed)"
	}
	s := fmt.Sprintf("page-locked %s%s at %#x", accounting.FormatBytes(int64(len(h.Bytes))), h.Flags.note(), bytesAddr(h.Bytes))
	if h.DevPtr != 0 {
		s += ", device " + h.DevPtr.String()
	}
	return s
}

// GoString is %#v's Go syntax, with the bytes as a comment:
// "driver.HostMem{Bytes:[]byte{ /* 4096 bytes at 0x7f3a00000000 */ }, DevPtr:0x0, Flags:0x2}".
func (h HostMem) GoString() string {
	return fmt.Sprintf("driver.HostMem{Bytes:%s, DevPtr:%#x, Flags:%#x}", goBytes(h.Bytes), uintptr(h.DevPtr), uint32(h.Flags))
}

// String describes the range: "page-locked 1.00 MiB (mapped) at 0x7f3a00000000",
// "registered" for memory page-locked by Register.
func (h HostRange) String() string {
	how := "page-locked"
	if h.Registered {
		how = "registered"
	}
	return fmt.Sprintf("%s %s%s at %#x", how, accounting.FormatBytes(int64(len(h.Mem))), h.Flags.note(), h.Addr)
}

// GoString is %#v's Go syntax, with the bytes as a comment.
func (h HostRange) GoString() string {
	return fmt.Sprintf("driver.HostRange{Addr:%#x, Mem:%s, Flags:%#x, Registered:%t}", h.Addr, goBytes(h.Mem), uint32(h.Flags), h.Registered)
}

// note is " (mapped)" for the flags, "" for none.
func (f HostFlags) note() string {
	if f == 0 {
		return ""
	}
	return " (" + f.String() + ")"
}

// goBytes writes a byte slice for a GoString without its contents:
// "[]byte{ /* 4096 bytes at 0x7f3a00000000 */ }", "[]byte(nil)".
func goBytes(b []byte) string {
	if b == nil {
		return "[]byte(nil)"
	}
	return fmt.Sprintf("[]byte{ /* %d bytes at %#x */ }", len(b), bytesAddr(b))
}

func bytesAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
