//go:build linux && (amd64 || arm64) && !sim_nomemfd

package sim

import (
	"fmt"
	"syscall"
	"unsafe"
)

// hostReservation is the host address space behind a reservation: mem,
// mapped PROT_NONE, whose aligned part from pad on is the device range.
type hostReservation struct {
	mem  []byte
	pad  int64
	size int64
}

// vmmSupported says whether sim's virtual memory works here: it maps the
// memory file, so it does where the memory file exists.
func vmmSupported() error { return nil }

// reserveHost reserves size bytes of host address space aligned to
// alignment, with no access and nothing committed.
func reserveHost(size, alignment int64) (hostReservation, error) {
	mem, err := syscall.Mmap(-1, 0, int(size+alignment), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return hostReservation{}, fmt.Errorf("reserve host address space: %w", err)
	}
	a := int64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	pad := (a+alignment-1)/alignment*alignment - a
	return hostReservation{mem: mem, pad: pad, size: size}, nil
}

func (h hostReservation) start() uintptr {
	return uintptr(unsafe.Pointer(&h.mem[h.pad]))
}

// bytes returns the range's bytes [off, off+n).
func (h hostReservation) bytes(off, n int64) []byte {
	return h.mem[h.pad+off : h.pad+off+n : h.pad+off+n]
}

// mapFile maps n bytes of the memory file fd from fileOff at off of the
// range, readable and writable, in place of what was there.
func (h hostReservation) mapFile(off, n int64, fd int, fileOff int64) error {
	return mmapFixed(h.start()+uintptr(off), n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED, fd, fileOff)
}

// unmap makes [off, off+n) of the range reserved again: no access,
// nothing committed.
func (h hostReservation) unmap(off, n int64) error {
	return mmapFixed(h.start()+uintptr(off), n, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE, -1, 0)
}

// free gives the address space back.
func (h hostReservation) free() { _ = syscall.Munmap(h.mem) }

// mmapFixed maps at addr, which lies in a mapping of this package's, so
// MAP_FIXED replaces only pages that are the range's own.
func mmapFixed(addr uintptr, n int64, prot, flags, fd int, off int64) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_MMAP, addr, uintptr(n), uintptr(prot), uintptr(flags|syscall.MAP_FIXED), uintptr(fd), uintptr(off))
	if errno != 0 {
		return fmt.Errorf("mmap: %w", errno)
	}
	return nil
}
