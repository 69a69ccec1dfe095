package driver

import (
	"fmt"
	"slices"
	"sort"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
)

// HostRange is one page-locked host allocation of a device.
type HostRange struct {
	Addr       uintptr
	Mem        []byte
	Flags      HostFlags
	Registered bool // page-locked by registering memory the program had, not allocated
	// DevAddr is the device address of mapped memory where it is not
	// Addr: unified addressing's exceptions, registered and write-combined
	// memory, for which "there exists a distinct host and device address"
	// (sim gives them one). 0: the device uses Addr.
	DevAddr uintptr
}

// Device returns the address the device reaches mapped memory at.
func (h HostRange) Device() uintptr {
	if h.DevAddr != 0 {
		return h.DevAddr
	}
	return h.Addr
}

// Kind returns the ledger kind the range is counted under.
func (h HostRange) Kind() accounting.Kind {
	if h.Registered {
		return accounting.Registered
	}
	return h.Flags.LedgerKind()
}

// HostRanges is the sorted set of a device's page-locked host allocations.
// Backends use it to tell page-locked from pageable host memory (the copy
// path the ledger records) and to find mapped memory. It is not safe for
// concurrent use: the backend guards it with its own lock.
type HostRanges struct {
	list []HostRange
}

func (r *HostRanges) index(addr uintptr) int {
	return sort.Search(len(r.list), func(i int) bool { return r.list[i].Addr > addr }) - 1
}

// Insert adds a range.
func (r *HostRanges) Insert(h HostRange) {
	r.list = slices.Insert(r.list, r.index(h.Addr)+1, h)
}

// Remove removes the range that starts at addr and returns it; ok is false
// when no range starts there.
func (r *HostRanges) Remove(addr uintptr) (h HostRange, ok bool) {
	i := r.index(addr)
	if i < 0 || r.list[i].Addr != addr {
		return HostRange{}, false
	}
	h = r.list[i]
	r.list = slices.Delete(r.list, i, i+1)
	return h, true
}

// Containing returns the range that holds all of [addr, addr+n).
func (r *HostRanges) Containing(addr uintptr, n int64) (HostRange, bool) {
	i := r.index(addr)
	if i < 0 || n < 0 {
		return HostRange{}, false
	}
	h := r.list[i]
	if int64(addr-h.Addr)+n > int64(len(h.Mem)) {
		return HostRange{}, false
	}
	return h, true
}

// ContainingDevice returns the mapped range whose device addresses hold
// all of [addr, addr+n): its host address where the device uses that,
// else its DevAddr. The host address of memory with a distinct device
// address is not one the device can use.
func (r *HostRanges) ContainingDevice(addr uintptr, n int64) (HostRange, bool) {
	if h, ok := r.Containing(addr, n); ok && h.Flags&Mapped != 0 && h.DevAddr == 0 {
		return h, true
	}
	if n < 0 {
		return HostRange{}, false
	}
	for _, h := range r.list {
		if h.DevAddr != 0 && h.Flags&Mapped != 0 && addr >= h.DevAddr && int64(addr-h.DevAddr)+n <= int64(len(h.Mem)) {
			return h, true
		}
	}
	return HostRange{}, false
}

// Overlaps reports whether any range shares a byte with [addr, addr+n).
func (r *HostRanges) Overlaps(addr uintptr, n int64) bool {
	if n <= 0 {
		return false
	}
	end := addr + uintptr(n)
	i := sort.Search(len(r.list), func(i int) bool { return r.list[i].Addr >= end }) - 1
	return i >= 0 && r.list[i].Addr+uintptr(len(r.list[i].Mem)) > addr
}

// Path returns the copy path for host memory b: PathStaged when it lies
// inside one staging range, PathPinned inside any other page-locked range,
// PathDirect (pageable) otherwise.
func (r *HostRanges) Path(b []byte) accounting.Path {
	if len(b) == 0 {
		return accounting.PathDirect
	}
	h, ok := r.Containing(uintptr(unsafe.Pointer(unsafe.SliceData(b))), int64(len(b)))
	switch {
	case !ok:
		return accounting.PathDirect
	case h.Flags&Staging != 0:
		return accounting.PathStaged
	}
	return accounting.PathPinned
}

// TakeAll empties the set and returns what it held, for a device's Close.
func (r *HostRanges) TakeAll() []HostRange {
	all := r.list
	r.list = nil
	return all
}

// Take removes and returns the range of h: host memory this device
// allocated (registered false) or registered (registered true). Empty memory, or memory that is not a live allocation (freed
// already, or never this device's), is an error wrapping ErrInvalidPointer.
func (r *HostRanges) Take(h *HostMem, registered bool) (HostRange, error) {
	if h == nil || len(h.Bytes) == 0 {
		return HostRange{}, fmt.Errorf("no memory: %w", ErrInvalidPointer)
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(h.Bytes)))
	a, ok := r.Remove(addr)
	if !ok {
		return HostRange{}, fmt.Errorf("0x%x is not a live host allocation of this device: %w", addr, ErrInvalidPointer)
	}
	if a.Registered != registered {
		r.Insert(a)
		if registered {
			return HostRange{}, fmt.Errorf("0x%x was allocated, not registered; free it instead: %w", addr, ErrInvalidPointer)
		}
		return HostRange{}, fmt.Errorf("0x%x was registered, not allocated; unregister it instead: %w", addr, ErrInvalidPointer)
	}
	return a, nil
}
