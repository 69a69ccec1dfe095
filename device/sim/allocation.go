package sim

import (
	"github.com/cuarray/cuarray/devarray"
)

// Allocation returns the live allocation that holds address p: device
// memory, mapped page-locked host memory, or memory opened through IPC.
// Imports check a foreign descriptor's extent against it, so that a
// descriptor claiming more than its allocation is refused, never read or
// written past.
func (d *Device) Allocation(p devarray.Ptr) (base devarray.Ptr, size int64, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return 0, 0, false
	}
	addr := uintptr(p)
	if addr >= d.base && addr < d.base+uintptr(d.arena.size) {
		s, ok := d.arena.find(int64(addr-d.base), 1)
		if !ok || d.vmm.isPhysical(s.off) {
			return 0, 0, false
		}
		return devarray.Ptr(d.base + uintptr(s.off)), s.size, true
	}
	if h, ok := d.host.ContainingDevice(addr, 1); ok {
		return devarray.Ptr(h.Device()), int64(len(h.Mem)), true
	}
	if a := d.managed.mappedAt(addr, 1); a != nil {
		return devarray.Ptr(a.base), a.size, true
	}
	if base, size, ok := d.vmm.vmmAllocation(addr); ok {
		return base, size, true
	}
	if h, ok := d.host.Containing(addr, 1); ok {
		return devarray.Ptr(h.Addr), int64(len(h.Mem)), true
	}
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	for start, o := range d.ipc.opened {
		if addr >= start && addr-start < uintptr(len(o.mem)) {
			return devarray.Ptr(start), int64(len(o.mem)), true
		}
	}
	return 0, 0, false
}
