package sim

import (
	"errors"

	"github.com/cuarray/cuarray/device/driver"
)

// Resolver finds the live allocation that holds a device address: its
// base address and its bytes, as long as the program asked for (a device
// allocation's alignment padding is not in it, as compute-sanitizer
// counts an access there out of bounds). ok is false where no live
// allocation holds the address.
type Resolver func(addr uint64) (base uint64, mem []byte, ok bool)

// LaunchResolving queues f on stream s (nil: the default stream) as
// LaunchFaulting does, for a kernel whose accesses are known only as it
// runs (interpreted PTX): f finds the memory it touches through resolve,
// which is valid only while f runs; no memory can be allocated or freed
// meanwhile. ranges declare what the kernel may touch, for the stream race
// checker (nil: nothing is known). An error from f that wraps
// driver.ErrContextFailed (an illegal address, a misaligned access, a
// trap) faults the device, a sticky error, as on a GPU.
func (d *Device) LaunchResolving(s driver.Stream, ranges []driver.Range, f func(resolve Resolver) error) error {
	return d.LaunchKernel(s, "", ranges, f)
}

// LaunchKernel is LaunchResolving for the kernel called name, which the
// stream race checker's reports name ("kernel saxpy").
func (d *Device) LaunchKernel(s driver.Stream, name string, ranges []driver.Range, f func(resolve Resolver) error) error {
	return d.LaunchInterpreted(s, name, ranges, func(mem *KernelMemory) error { return f(mem.Lookup) })
}

// LaunchInterpreted is LaunchKernel for an interpreted kernel (package
// ptx), whose global memory is mem: the kernel marks the pages of managed
// memory it touches there, and they settle on the device once it has run
// (their faults and migrations recorded in the ledger).
func (d *Device) LaunchInterpreted(s driver.Stream, name string, ranges []driver.Range, f func(mem *KernelMemory) error) error {
	kind := "kernel"
	if name != "" {
		kind += " " + name
	}
	return d.launchOp(s, kind, ranges, func() error {
		if err := d.deviceWork("kernel"); err != nil {
			return err
		}
		mem := &KernelMemory{d: d}
		d.mu.RLock()
		err := f(mem)
		migrated := mem.settle()
		d.mu.RUnlock()
		waitUntil(migrated) // the kernel is done once the pages it faulted in have crossed
		if err == nil || !errors.Is(err, driver.ErrContextFailed) {
			return err
		}
		d.fault.err.CompareAndSwap(nil, &err)
		return d.checkFault("kernel")
	})
}

// resolve is the Resolver of d: device memory, mapped page-locked host
// memory, pageable host memory declared for kernels (UsePageable) and
// memory opened through IPC. The caller holds d.mu for reading.
func (d *Device) resolve(addr uint64) (uint64, []byte, bool) {
	if d.closed {
		return 0, nil, false
	}
	a := uintptr(addr)
	if a >= d.base && a < d.base+uintptr(d.arena.size) {
		s, ok := d.arena.find(int64(a-d.base), 1)
		if !ok || d.vmm.isPhysical(s.off) {
			return 0, nil, false
		}
		n := min(d.requested[s.off], s.size)
		return uint64(d.base) + uint64(s.off), d.mem[s.off : s.off+n : s.off+n], true
	}
	if h, ok := d.host.ContainingDevice(a, 1); ok {
		return uint64(h.Device()), h.Mem, true
	}
	if m := d.managed.mappedAt(a, 1); m != nil {
		return uint64(m.base), m.mem[:m.asked:m.asked], true
	}
	if r := d.pageableAt(a, 1); r != nil {
		return uint64(r.addr), r.mem, true
	}
	if start, m, in, err := d.vmm.accessible(a, 1); in {
		// Reserved but unmapped, or mapped without access: an illegal
		// address to a kernel, as to a GPU's.
		return uint64(start), m, err == nil
	}
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	for start, o := range d.ipc.opened {
		if a >= start && a-start < uintptr(len(o.mem)) {
			return uint64(start), o.mem, true
		}
	}
	return 0, nil, false
}
