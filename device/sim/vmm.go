package sim

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess and their inverses) on sim's own memory. A reservation is
// host address space reserved with no access (mmap PROT_NONE); physical
// memory is an arena allocation of the device's memory file, which has no
// device address a program sees; mapping maps that part of the memory file
// into the reservation (mmap MAP_FIXED), so the same bytes sit behind the
// new addresses and nothing is copied: a range grows in place. The rules,
// from the CUDA Driver API's "Virtual Memory Management" pages, each
// quoted where it is kept (vmm_rules.go).

// VMMGranularity is sim's minimum and recommended granularity of virtual
// memory: 2 MiB, a guess at what an H100 or H200 reports for pinned
// device memory (the conformance row "vmm granularity" logs what a GPU
// answers).
const VMMGranularity = 2 << 20

// vmmState is a device's reservations and physical memory. d.mu guards
// it: Lock to change it, RLock to look up an address.
type vmmState struct {
	active   atomic.Bool // something was reserved or created: accesses look here
	ranges   []*vaRange  // by start address
	phys     map[driver.PhysicalHandle]*physical
	physAt   map[int64]*physical // by arena offset: sim's own lookups skip them
	nextPhys driver.PhysicalHandle
}

// vaRange is one reservation.
type vaRange struct {
	start uintptr
	size  int64
	host  hostReservation
	maps  []*vaMapping // by offset, never overlapping
}

// vaMapping is a part of a reservation that physical memory is mapped into.
type vaMapping struct {
	off, size int64 // in the reservation
	phys      *physical
	access    bool // cuMemSetAccess made it readable and writable
}

// physical is memory cuMemCreate made: size bytes of the memory file from
// fileOff, page-aligned, inside the arena allocation at arenaOff.
type physical struct {
	handle            driver.PhysicalHandle
	arenaOff, fileOff int64
	size              int64
	released          bool
	mappings          int
}

// pageAlign is the host page size the memory file is mapped at: an arena
// allocation is only 256-aligned, so physical memory takes this much more.
const pageAlign = 4096

// MemGranularity returns VMMGranularity as both figures, or an error
// wrapping errors.ErrUnsupported where sim has no virtual memory (no
// memory file).
func (d *Device) MemGranularity() (driver.Granularity, error) {
	if d.Closed() {
		return driver.Granularity{}, fmt.Errorf("sim: mem granularity: %w", driver.ErrClosed)
	}
	if err := vmmSupported(); err != nil {
		return driver.Granularity{}, fmt.Errorf("sim: mem granularity: %w", err)
	}
	return driver.Granularity{Minimum: VMMGranularity, Recommended: VMMGranularity}, nil
}

// ReserveAddress reserves size bytes of address space (cuMemAddressReserve),
// counted under accounting.VirtualAddress.
func (d *Device) ReserveAddress(size, alignment int64) (devarray.Ptr, error) {
	if err := checkReserve(size, alignment); err != nil {
		return 0, fmt.Errorf("sim: reserve address: %w", err)
	}
	if err := d.checkFault("reserve address"); err != nil {
		return 0, err
	}
	alignment = max(alignment, VMMGranularity)
	if err := d.ledger.Reserve(accounting.VirtualAddress, size); err != nil {
		return 0, fmt.Errorf("sim: reserve address: %w", err)
	}
	h, err := reserveHost(size, alignment)
	if err != nil {
		d.ledger.Cancel(accounting.VirtualAddress, size)
		return 0, fmt.Errorf("sim: reserve address %d bytes: %w", size, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		h.free()
		d.ledger.Cancel(accounting.VirtualAddress, size)
		return 0, fmt.Errorf("sim: reserve address: %w", driver.ErrClosed)
	}
	r := &vaRange{start: h.start(), size: size, host: h}
	v := &d.vmm
	i, _ := slices.BinarySearchFunc(v.ranges, r.start, rangeByStart)
	v.ranges = slices.Insert(v.ranges, i, r)
	v.active.Store(true)
	d.ledger.Commit(accounting.VirtualAddress, r.start, size)
	return devarray.Ptr(r.start), nil
}

// rangeByStart and mappingByOffset order reservations and mappings for
// binary search.
func rangeByStart(x *vaRange, a uintptr) int    { return cmp.Compare(x.start, a) }
func mappingByOffset(x *vaMapping, o int64) int { return cmp.Compare(x.off, o) }

// FreeAddress frees a reservation (cuMemAddressFree).
func (d *Device) FreeAddress(p devarray.Ptr, size int64) error {
	if err := d.checkFault("free address"); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim: free address %v: %w", p, driver.ErrClosed)
	}
	i, r := d.vmm.rangeAt(uintptr(p))
	if err := checkAddressFree(r, uintptr(p), size); err != nil {
		return fmt.Errorf("sim: free address %v: %w", p, err)
	}
	d.vmm.ranges = slices.Delete(d.vmm.ranges, i, i+1)
	r.host.free()
	d.ledger.Free(accounting.VirtualAddress, r.start, r.size)
	return nil
}

// CreatePhysical makes size bytes of physical memory (cuMemCreate),
// counted under accounting.Physical.
func (d *Device) CreatePhysical(size int64) (driver.PhysicalHandle, error) {
	if err := checkCreate(size); err != nil {
		return 0, fmt.Errorf("sim: create physical: %w", err)
	}
	if err := d.checkFault("create physical"); err != nil {
		return 0, err
	}
	if err := vmmSupported(); err != nil {
		return 0, fmt.Errorf("sim: create physical: %w", err)
	}
	if size > d.cfg.Memory {
		d.ledger.RecordFailure(accounting.Physical, size)
		return 0, fmt.Errorf("sim: create physical: %w", d.ledger.OutOfMemory(accounting.Physical, size, d.ledger.Current(accounting.Physical), false))
	}
	if err := d.ledger.Reserve(accounting.Physical, size); err != nil {
		return 0, fmt.Errorf("sim: create physical: %w", err)
	}
	if injected(&d.allocCountdown) {
		d.ledger.Cancel(accounting.Physical, size)
		return 0, fmt.Errorf("sim: create physical %d bytes: %w", size, driver.ErrInjected)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.ledger.Cancel(accounting.Physical, size)
		return 0, fmt.Errorf("sim: create physical: %w", driver.ErrClosed)
	}
	off, ok := d.arena.alloc(size + pageAlign - Alignment)
	var free, largest int64
	if !ok {
		free, largest = d.arena.size-d.arena.used, d.arena.largestFree()
		d.mu.Unlock()
		d.ledger.Cancel(accounting.Physical, size)
		oom := d.ledger.OutOfMemory(accounting.Physical, size, d.ledger.Current(accounting.Physical), false)
		oom.DeviceFree, oom.DeviceTotal, oom.DeviceLargestFree = free, d.arena.size, largest
		return 0, fmt.Errorf("sim: create physical: %w", oom)
	}
	v := &d.vmm
	if v.phys == nil {
		v.phys, v.physAt = make(map[driver.PhysicalHandle]*physical), make(map[int64]*physical)
	}
	v.nextPhys++
	ph := &physical{handle: v.nextPhys, arenaOff: off, fileOff: (off + pageAlign - 1) / pageAlign * pageAlign, size: size}
	v.phys[ph.handle], v.physAt[off] = ph, ph
	v.active.Store(true)
	d.mu.Unlock()
	d.ledger.Commit(accounting.Physical, uintptr(ph.handle), size)
	return ph.handle, nil
}

// ReleasePhysical releases a handle (cuMemRelease): its memory is freed
// now if nothing maps it, else when its last mapping is unmapped.
func (d *Device) ReleasePhysical(h driver.PhysicalHandle) error {
	if err := d.checkFault("release physical"); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim: release physical %d: %w", h, driver.ErrClosed)
	}
	ph := d.vmm.phys[h]
	if ph == nil || ph.released {
		return fmt.Errorf("sim: release physical %d: not a live handle: %w", h, driver.ErrInvalidValue)
	}
	ph.released = true
	d.freePhysicalIfDone(ph)
	return nil
}

// freePhysicalIfDone frees released physical memory that nothing maps:
// "The memory allocation will be freed when all outstanding mappings to
// the memory are unmapped and when all outstanding references to the
// handle (including it's shareable counterparts) are also released."
// (cuMemRelease) d.mu is held.
func (d *Device) freePhysicalIfDone(ph *physical) {
	if !ph.released || ph.mappings > 0 {
		return
	}
	v := &d.vmm
	delete(v.phys, ph.handle)
	delete(v.physAt, ph.arenaOff)
	if size, ok := d.arena.release(ph.arenaOff); ok && size >= 1<<20 {
		punchHole(d.memfd, ph.arenaOff, size)
	}
	d.ledger.Free(accounting.Physical, uintptr(ph.handle), ph.size)
}

// MapMemory maps size bytes of h from offset at p (cuMemMap), not
// accessible until SetAccess.
func (d *Device) MapMemory(p devarray.Ptr, size, offset int64, h driver.PhysicalHandle) error {
	if err := d.checkFault("map memory"); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim: map memory %v: %w", p, driver.ErrClosed)
	}
	ph := d.vmm.phys[h]
	_, r := d.vmm.rangeContaining(uintptr(p), size)
	if err := checkMap(r, uintptr(p), size, offset, ph); err != nil {
		return fmt.Errorf("sim: map memory %v, %d bytes of handle %d from %d: %w", p, size, h, offset, err)
	}
	off := int64(uintptr(p) - r.start)
	if err := r.host.mapFile(off, size, d.memfd, ph.fileOff+offset); err != nil {
		return fmt.Errorf("sim: map memory %v: %w", p, err)
	}
	m := &vaMapping{off: off, size: size, phys: ph}
	i, _ := slices.BinarySearchFunc(r.maps, off, mappingByOffset)
	r.maps = slices.Insert(r.maps, i, m)
	ph.mappings++
	return nil
}

// UnmapMemory unmaps whole mappings (cuMemUnmap); released physical memory
// that nothing maps any more is freed.
func (d *Device) UnmapMemory(p devarray.Ptr, size int64) error {
	if err := d.checkFault("unmap memory"); err != nil {
		return err
	}
	// Work queued before may still touch the range: a guess that the
	// driver waits for it, as cuMemFree does for the legacy stream.
	if err := d.legacy.drain(); err != nil {
		return fmt.Errorf("sim: unmap memory %v: %w", p, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim: unmap memory %v: %w", p, driver.ErrClosed)
	}
	_, r := d.vmm.rangeContaining(uintptr(p), size)
	first, last, err := checkUnmap(r, uintptr(p), size)
	if err != nil {
		return fmt.Errorf("sim: unmap memory %v, %d bytes: %w", p, size, err)
	}
	if err := r.host.unmap(int64(uintptr(p)-r.start), size); err != nil {
		return fmt.Errorf("sim: unmap memory %v: %w", p, err)
	}
	gone := slices.Clone(r.maps[first : last+1])
	r.maps = slices.Delete(r.maps, first, last+1)
	for _, m := range gone {
		m.phys.mappings--
		d.freePhysicalIfDone(m.phys)
	}
	return nil
}

// SetAccess sets the access of [p, p+size), mapped throughout
// (cuMemSetAccess).
func (d *Device) SetAccess(p devarray.Ptr, size int64, rw bool) error {
	if err := d.checkFault("set access"); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sim: set access %v: %w", p, driver.ErrClosed)
	}
	_, r := d.vmm.rangeContaining(uintptr(p), size)
	first, last, err := checkSetAccess(r, uintptr(p), size)
	if err != nil {
		return fmt.Errorf("sim: set access %v, %d bytes: %w", p, size, err)
	}
	for _, m := range r.maps[first : last+1] {
		m.access = rw
	}
	return nil
}

// closeVMM unmaps and frees every reservation and all physical memory, at
// Close, before the arena's allocations are counted freed. d.mu is held.
func (d *Device) closeVMM() {
	v := &d.vmm
	for _, r := range v.ranges {
		for _, m := range r.maps {
			m.phys.mappings--
		}
		r.maps = nil
		r.host.free()
		d.ledger.Free(accounting.VirtualAddress, r.start, r.size)
	}
	v.ranges = nil
	for _, ph := range v.phys {
		ph.released, ph.mappings = true, 0
		d.freePhysicalIfDone(ph)
	}
}
