package sim

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Unified addressing's exceptions: "for cuMemHostRegister and
// WRITECOMBINED memory there exists a distinct host and device address"
// (CUDA Driver API, Unified Addressing). sim gives mapped registered and
// mapped write-combined memory a device address of its own, an address
// range reserved with no access, so that a kernel or a device copy handed
// the host pointer faults on sim as it may on a GPU, and only DevPtr
// works. (A GPU whose CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM is 1 would
// accept the host pointer of registered memory; sim takes the strict
// reading, and the conformance rows log what the next GPU answers.)
type aliases struct {
	mu   sync.RWMutex
	list []alias
}

// alias is the device address range of host memory with its own.
type alias struct {
	dev, host uintptr
	n         int64
	reserved  []byte // the address range, mapped with no access
}

// distinctDeviceAddress reports whether page-locked memory with flags has
// a device address other than its host address.
func distinctDeviceAddress(flags driver.HostFlags, registered bool) bool {
	return flags&driver.Mapped != 0 && (registered || flags&driver.WriteCombined != 0)
}

// add reserves n bytes of address space as the device address of the host
// memory at host, and returns it.
func (a *aliases) add(host uintptr, n int64) (uintptr, error) {
	r, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return 0, fmt.Errorf("reserve a device address for %d bytes: %w", n, err)
	}
	dev := uintptr(unsafe.Pointer(unsafe.SliceData(r)))
	a.mu.Lock()
	a.list = append(a.list, alias{dev: dev, host: host, n: n, reserved: r})
	a.mu.Unlock()
	return dev, nil
}

// remove gives back the device address dev (0: none).
func (a *aliases) remove(dev uintptr) {
	if dev == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, x := range a.list {
		if x.dev == dev {
			syscall.Munmap(x.reserved)
			a.list = append(a.list[:i], a.list[i+1:]...)
			return
		}
	}
}

// unalias rewrites accesses through a device address of host memory as
// accesses of its host bytes, so that the stream race checker sees the
// device and the host touch the same bytes.
func (a *aliases) unalias(acc []access) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if len(a.list) == 0 {
		return
	}
	for i := range acc {
		for _, x := range a.list {
			if acc[i].lo >= x.dev && acc[i].lo < x.dev+uintptr(x.n) {
				acc[i].lo += x.host - x.dev
				acc[i].hi += x.host - x.dev
				break
			}
		}
	}
}

// hostPointerHint says, for an address that is no live allocation's, when
// it is the host address of memory whose device address differs: the
// mistake a GPU would fault on too.
func (d *Device) hostPointerHint(p devarray.Ptr) string {
	if h, ok := d.host.Containing(uintptr(p), 1); ok && h.DevAddr != 0 {
		return fmt.Sprintf(" (it is the host address of %s memory, whose device address is %#x: use DevPtr)", hostKindName(h), h.DevAddr)
	}
	return ""
}

// hostKindName names a page-locked range's kind for errors.
func hostKindName(h driver.HostRange) string {
	if h.Registered {
		return "registered"
	}
	return "write-combined"
}
