//go:build cuda

package cuda

import (
	"fmt"
	"sort"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Virtual memory management: the driver keeps the rules (sizes and
// addresses in granules, no mapping over a mapping, access set before
// use); the device keeps what it made, to count it in the ledger and
// let it go at Close.

// vmmLive is what a device's virtual memory holds. The device's mu guards it.
type vmmLive struct {
	reserved map[devarray.Ptr]int64                   // reservations and their sizes
	phys     map[driver.PhysicalHandle]*physicalState // physical memory not yet freed
	maps     map[devarray.Ptr]mapping                 // mappings, by address
}

// physicalState is physical memory the ledger counts until it is freed:
// released and unmapped everywhere.
type physicalState struct {
	size     int64
	released bool
	mappings int
}

// mapping is physical memory h mapped over size bytes.
type mapping struct {
	size int64
	h    driver.PhysicalHandle
}

func (v *vmmLive) init() {
	if v.reserved == nil {
		v.reserved = make(map[devarray.Ptr]int64)
		v.phys = make(map[driver.PhysicalHandle]*physicalState)
		v.maps = make(map[devarray.Ptr]mapping)
	}
}

// MemGranularity returns the device's minimum and recommended granularity
// of pinned memory (cuMemGetAllocationGranularity).
func (d *Device) MemGranularity() (driver.Granularity, error) {
	var g driver.Granularity
	err := d.call(func() error {
		var c int
		if g.Minimum, c = memGranularity(d.ordinal, false); c != 0 {
			return check(c)
		}
		g.Recommended, c = memGranularity(d.ordinal, true)
		return check(c)
	})
	if err != nil {
		return driver.Granularity{}, fmt.Errorf("cuda: mem granularity: %w", err)
	}
	return g, nil
}

// ReserveAddress reserves size bytes of address space (cuMemAddressReserve),
// counted under accounting.VirtualAddress.
func (d *Device) ReserveAddress(size, alignment int64) (devarray.Ptr, error) {
	if size <= 0 || alignment < 0 {
		return 0, fmt.Errorf("cuda: reserve address %d bytes aligned to %d: %w", size, alignment, driver.ErrInvalidValue)
	}
	if err := d.ledger.Reserve(accounting.VirtualAddress, size); err != nil {
		return 0, fmt.Errorf("cuda: reserve address: %w", err)
	}
	var p uintptr
	err := d.call(func() error {
		var c int
		p, c = memAddressReserve(size, alignment)
		return check(c)
	})
	if err != nil {
		d.ledger.Cancel(accounting.VirtualAddress, size)
		return 0, fmt.Errorf("cuda: reserve address %d bytes: %w", size, err)
	}
	if !d.keepLive(func() { d.vmm.init(); d.vmm.reserved[devarray.Ptr(p)] = size }) {
		d.ledger.Cancel(accounting.VirtualAddress, size)
		d.callAlways(func() error { return check(memAddressFree(p, size)) })
		return 0, fmt.Errorf("cuda: reserve address: %w", driver.ErrClosed)
	}
	d.ledger.Commit(accounting.VirtualAddress, p, size)
	return devarray.Ptr(p), nil
}

// FreeAddress frees a reservation (cuMemAddressFree).
func (d *Device) FreeAddress(p devarray.Ptr, size int64) error {
	if err := d.call(func() error { return check(memAddressFree(uintptr(p), size)) }); err != nil {
		return fmt.Errorf("cuda: free address %v: %w", p, err)
	}
	d.mu.Lock()
	n, ok := d.vmm.reserved[p]
	delete(d.vmm.reserved, p)
	d.mu.Unlock()
	if ok {
		d.ledger.Free(accounting.VirtualAddress, uintptr(p), n)
	}
	return nil
}

// CreatePhysical makes size bytes of pinned device memory (cuMemCreate),
// counted under accounting.Physical.
func (d *Device) CreatePhysical(size int64) (driver.PhysicalHandle, error) {
	if size <= 0 {
		return 0, fmt.Errorf("cuda: create physical %d bytes: %w", size, driver.ErrInvalidValue)
	}
	if err := d.ledger.Reserve(accounting.Physical, size); err != nil {
		return 0, fmt.Errorf("cuda: create physical: %w", err)
	}
	var h uint64
	err := d.call(func() error {
		var c int
		h, c = memCreate(size, d.ordinal)
		return check(c)
	})
	if err != nil {
		d.ledger.Cancel(accounting.Physical, size)
		return 0, fmt.Errorf("cuda: create physical %d bytes: %w", size, err)
	}
	ph := driver.PhysicalHandle(h)
	if !d.keepLive(func() { d.vmm.init(); d.vmm.phys[ph] = &physicalState{size: size} }) {
		d.ledger.Cancel(accounting.Physical, size)
		d.callAlways(func() error { return check(memRelease(h)) })
		return 0, fmt.Errorf("cuda: create physical: %w", driver.ErrClosed)
	}
	d.ledger.Commit(accounting.Physical, uintptr(ph), size)
	return ph, nil
}

// ReleasePhysical releases a handle (cuMemRelease); the ledger counts its
// memory until its last mapping is unmapped too.
func (d *Device) ReleasePhysical(h driver.PhysicalHandle) error {
	d.mu.Lock()
	ph := d.vmm.phys[h]
	d.mu.Unlock()
	if ph == nil {
		// Not passed on: "If handle is not a valid handle the behavior is undefined." (cuMemRelease)
		return fmt.Errorf("cuda: release physical %d: not a live handle of this device: %w", h, driver.ErrInvalidValue)
	}
	if err := d.call(func() error { return check(memRelease(uint64(h))) }); err != nil {
		return fmt.Errorf("cuda: release physical %d: %w", h, err)
	}
	d.mu.Lock()
	ph.released = true
	d.mu.Unlock()
	d.forgetIfFreed(h)
	return nil
}

// forgetIfFreed counts physical memory h freed once it is released and
// nothing maps it.
func (d *Device) forgetIfFreed(h driver.PhysicalHandle) {
	d.mu.Lock()
	ph := d.vmm.phys[h]
	done := ph != nil && ph.released && ph.mappings == 0
	if done {
		delete(d.vmm.phys, h)
	}
	d.mu.Unlock()
	if done {
		d.ledger.Free(accounting.Physical, uintptr(h), ph.size)
	}
}

// MapMemory maps size bytes of h from offset at p (cuMemMap).
func (d *Device) MapMemory(p devarray.Ptr, size, offset int64, h driver.PhysicalHandle) error {
	if err := d.call(func() error { return check(memMap(uintptr(p), size, offset, uint64(h))) }); err != nil {
		return fmt.Errorf("cuda: map memory %v, %d bytes of handle %d from %d: %w", p, size, h, offset, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vmm.init()
	d.vmm.maps[p] = mapping{size: size, h: h}
	if ph := d.vmm.phys[h]; ph != nil {
		ph.mappings++
	}
	return nil
}

// UnmapMemory unmaps [p, p+size) (cuMemUnmap).
func (d *Device) UnmapMemory(p devarray.Ptr, size int64) error {
	if err := d.call(func() error { return check(memUnmap(uintptr(p), size)) }); err != nil {
		return fmt.Errorf("cuda: unmap memory %v, %d bytes: %w", p, size, err)
	}
	d.mu.Lock()
	var unmapped []driver.PhysicalHandle
	for a, m := range d.vmm.maps {
		if a >= p && int64(a-p) < size {
			delete(d.vmm.maps, a)
			if ph := d.vmm.phys[m.h]; ph != nil {
				ph.mappings--
			}
			unmapped = append(unmapped, m.h)
		}
	}
	d.mu.Unlock()
	for _, h := range unmapped {
		d.forgetIfFreed(h)
	}
	return nil
}

// SetAccess makes [p, p+size) readable and writable by this device, or not
// accessible (cuMemSetAccess).
func (d *Device) SetAccess(p devarray.Ptr, size int64, rw bool) error {
	if err := d.call(func() error { return check(memSetAccess(uintptr(p), size, d.ordinal, rw)) }); err != nil {
		return fmt.Errorf("cuda: set access %v, %d bytes: %w", p, size, err)
	}
	return nil
}

// closeVMM unmaps, releases and frees what virtual memory still holds, at
// Close, after the context was synchronized.
func (d *Device) closeVMM(v vmmLive) error {
	if len(v.reserved) == 0 && len(v.phys) == 0 {
		return nil
	}
	return d.callAlways(func() error {
		var first error
		keep := func(c int) {
			if err := check(c); err != nil && first == nil {
				first = err
			}
		}
		addrs := make([]devarray.Ptr, 0, len(v.maps))
		for a := range v.maps {
			addrs = append(addrs, a)
		}
		sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
		for _, a := range addrs {
			keep(memUnmap(uintptr(a), v.maps[a].size))
		}
		for h, ph := range v.phys {
			if !ph.released {
				keep(memRelease(uint64(h)))
			}
			d.ledger.Free(accounting.Physical, uintptr(h), ph.size)
		}
		for p, size := range v.reserved {
			keep(memAddressFree(uintptr(p), size))
			d.ledger.Free(accounting.VirtualAddress, uintptr(p), size)
		}
		return first
	})
}
