package sim

import (
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// A device with pageable memory access (Config.PageableAccess,
// "pageable-access=hmm" or "ats") lets its kernels read and write the
// program's pageable host memory in place, by its host address, as the
// Driver API says of CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: "Device
// supports coherently accessing pageable memory without calling
// cudaHostRegister on it" (cuda.h). On a GPU with HMM or ATS every valid
// host address is reachable; sim reaches only the ranges declared through
// UsePageable, so a kernel that touches any other host address faults, as
// it does today: a guess, the strict one, that catches a kernel running
// past the slice it was given (a GPU would read whatever the process has
// mapped there, or fault where nothing is).

// pageableRange is host memory declared for the device's kernels.
type pageableRange struct {
	addr uintptr
	mem  []byte
}

// PageableAccess reports how the device reaches pageable host memory:
// driver.PageableNone, the default, as on most GPUs, unless
// Config.PageableAccess says otherwise.
func (d *Device) PageableAccess() driver.PageableAccess { return d.cfg.PageableAccess }

// UsePageable makes b, pageable host memory, reachable by the device's
// kernels, copies and memsets at its host address, which it returns,
// until ReleasePageable. Ranges may overlap, and the same memory may be
// declared more than once. On a device without pageable memory access it
// is an error wrapping driver.ErrNoPageableAccess. Nothing is counted.
func (d *Device) UsePageable(b []byte) (devarray.Ptr, error) {
	if !d.cfg.PageableAccess.Supported() {
		return 0, fmt.Errorf("sim: use pageable memory in place: pageable access %v: %w", d.cfg.PageableAccess, driver.ErrNoPageableAccess)
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("sim: use pageable memory in place: no bytes: %w", driver.ErrInvalidValue)
	}
	if err := d.checkFault("use pageable memory"); err != nil {
		return 0, err
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("sim: use pageable memory in place: %w", driver.ErrClosed)
	}
	d.inPlace = append(d.inPlace, pageableRange{addr: addr, mem: b[:len(b):len(b)]})
	return devarray.Ptr(addr), nil
}

// ReleasePageable ends one UsePageable of b: afterwards kernels reach
// its bytes only through another declaration that holds them. b not
// declared is an error wrapping driver.ErrInvalidPointer.
func (d *Device) ReleasePageable(b []byte) error {
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, r := range d.inPlace {
		if r.addr == addr && len(r.mem) == len(b) {
			d.inPlace = append(d.inPlace[:i], d.inPlace[i+1:]...)
			return nil
		}
	}
	if d.closed {
		return nil // Close forgot every declaration
	}
	return fmt.Errorf("sim: release pageable memory: %d bytes at %#x were not declared with UsePageable: %w", len(b), addr, driver.ErrInvalidPointer)
}

// pageableAt returns the declared pageable range that holds all of
// [addr, addr+n), or nil. The caller holds d.mu.
func (d *Device) pageableAt(addr uintptr, n int64) *pageableRange {
	for i := range d.inPlace {
		r := &d.inPlace[i]
		if addr >= r.addr && addr-r.addr < uintptr(len(r.mem)) && int64(addr-r.addr)+n <= int64(len(r.mem)) {
			return r
		}
	}
	return nil
}
