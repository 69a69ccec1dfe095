package sim

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
)

// Oversubscription. On a device with concurrent managed access, managed
// memory may be larger than the device's: "device memory oversubscription
// is possible for GPUs that have a non-zero value for the device attribute
// cudaDevAttrConcurrentManagedAccess" (CuPy's malloc_managed, after the
// CUDA Runtime API's memory management reference), so cuMemAllocManaged
// asks only that the host can back the allocation. sim keeps such an
// allocation's bytes in an anonymous mapping of its own, reserved without
// swap and filled by the OS only where touched (its address is its host
// address, as with unified addressing), not in the device's arena; what
// counts against the device's memory is the pages resident there. When a
// page moves to the device and the device-resident managed pages would
// pass the arena's free bytes, sim evicts device-resident pages to the
// host, least recently moved to the device first, each a page of DtoH on
// accounting.PathMigrated and one eviction in the ledger (a read-only
// duplicate of a read-mostly page is dropped, not written back, and is not
// counted). Device memory that cuMemAlloc takes later is found free by
// it: managed pages make room for it at the next migration. The order the
// driver evicts in is not documented; least recently migrated is a guess,
// and a program cannot observe it through a driver call (only CUPTI's
// unified memory counters show the evictions), so no conformance row
// checks it. A device without concurrent managed access keeps managed
// memory in its arena, within its memory, as before Pascal.

// mapManaged allocates the mapping of an oversubscribable managed
// allocation of size bytes, rounded up to whole pages. A host that cannot
// map it is out of memory.
func (d *Device) mapManaged(size int64) ([]byte, error) {
	mem, err := syscall.Mmap(-1, 0, int(wholePages(size)), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err == nil {
		return mem[:size:size], nil
	}
	if errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EINVAL) {
		d.ledger.RecordFailure(accounting.Managed, size)
		return nil, fmt.Errorf("sim: malloc managed %d bytes: %v: %w", size, err, d.ledger.OutOfMemory(accounting.Managed, size, d.ledger.Current(accounting.Managed), false))
	}
	return nil, fmt.Errorf("sim: malloc managed %d bytes: %w", size, err)
}

// unmapManaged gives a mapped managed allocation's mapping back.
func unmapManaged(a *managedAlloc) {
	syscall.Munmap(unsafe.Slice(unsafe.SliceData(a.mem), wholePages(a.size)))
}

// wholePages is n bytes rounded up to whole managed pages.
func wholePages(n int64) int64 { return (n + ManagedPageSize - 1) / ManagedPageSize * ManagedPageSize }

// mallocMapped allocates an oversubscribable managed allocation of size
// bytes (already aligned), counted in the ledger under accounting.Managed.
func (d *Device) mallocMapped(size int64) (*managedAlloc, error) {
	if err := d.ledger.Reserve(accounting.Managed, size); err != nil {
		return nil, fmt.Errorf("sim: malloc managed: %w", err)
	}
	mem, err := d.mapManaged(size)
	if err != nil {
		d.ledger.Cancel(accounting.Managed, size)
		return nil, err
	}
	a := &managedAlloc{base: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), size: size, mem: mem}
	d.ledger.Commit(accounting.Managed, a.base, size)
	return a, nil
}

// mappedAt returns the live mapped managed allocation that holds
// [addr, addr+n), or nil.
func (m *managedState) mappedAt(addr uintptr, n int64) *managedAlloc {
	m.mu.Lock()
	defer m.mu.Unlock()
	for base, a := range m.allocs {
		if a.mem != nil && addr >= base && addr < base+uintptr(a.size) {
			if n > a.size-int64(addr-base) {
				return nil
			}
			return a
		}
	}
	return nil
}

// freeMapped frees the mapped managed allocation at p, if it is one: its
// device-resident pages leave the device, its mapping is given back. The
// caller holds d.mu.
func (d *Device) freeMapped(p uintptr) bool {
	m := &d.managed
	m.mu.Lock()
	a := m.allocs[p]
	if a == nil || a.mem == nil {
		m.mu.Unlock()
		return false
	}
	delete(m.allocs, p)
	for i := range a.pages {
		if a.pages[i].at&onDevice != 0 {
			m.deviceBytes -= ManagedPageSize
		}
	}
	a.freed = true
	m.compact()
	m.mu.Unlock()
	unmapManaged(a)
	d.ledger.Free(accounting.Managed, p, a.size)
	return true
}

// freeAllMapped frees every mapped managed allocation, as the device
// closes. The caller holds d.mu.
func (d *Device) freeAllMapped() {
	m := &d.managed
	m.mu.Lock()
	var bases []uintptr
	for base, a := range m.allocs {
		if a.mem != nil {
			bases = append(bases, base)
		}
	}
	m.mu.Unlock()
	for _, base := range bases {
		d.freeMapped(base)
	}
}

// residentPage is a page that moved to the device, at its stamp then: a
// page since moved again, or freed, has another stamp (or its allocation
// is freed) and is skipped.
type residentPage struct {
	a     *managedAlloc
	i     int
	stamp uint64
}

// moved counts page i of a mapped allocation against the device's memory
// when it came to the device (it was not there: wasOn 0), the newest in
// the eviction order, and evicts pages to fit in room; or no longer when
// it left. It returns the pages evicted. The caller holds m.mu.
func (m *managedState) moved(a *managedAlloc, i int, wasOn residence, room int64) int64 {
	pg := &a.pages[i]
	switch nowOn := pg.at & onDevice; {
	case a.mem == nil || nowOn == wasOn:
		return 0
	case nowOn == 0:
		m.deviceBytes -= ManagedPageSize
		return 0
	}
	m.deviceBytes += ManagedPageSize
	m.clock++
	pg.stamp = m.clock
	m.order = append(m.order, residentPage{a, i, m.clock})
	if stale := len(m.order) - m.head - int(m.deviceBytes/ManagedPageSize); stale > len(m.order)/2+64 {
		m.compact()
	}
	return m.makeRoom(room, pg)
}

// valid reports whether r is still a device-resident page at the place the
// order gives it.
func (r residentPage) valid() bool {
	pg := &r.a.pages[r.i]
	return !r.a.freed && pg.stamp == r.stamp && pg.at&onDevice != 0
}

// compact drops the eviction order's stale entries: pages since moved
// away or again, and freed ones. The caller holds m.mu.
func (m *managedState) compact() {
	kept := m.order[:0]
	for _, r := range m.order[m.head:] {
		if r.valid() {
			kept = append(kept, r)
		}
	}
	clear(m.order[len(kept):])
	m.order, m.head = kept, 0
}

// makeRoom evicts device-resident pages of mapped allocations, least
// recently moved to the device first, until they fit in room bytes or
// only the page keep is left. It returns the pages written back to the
// host. The caller holds m.mu.
func (m *managedState) makeRoom(room int64, keep *managedPage) (evicted int64) {
	for m.deviceBytes > room && m.head < len(m.order) {
		r := m.order[m.head]
		pg := &r.a.pages[r.i]
		if !r.valid() {
			m.head++
			continue
		}
		if pg == keep {
			break
		}
		m.head++
		if pg.at == onDevice {
			evicted++
		}
		pg.at = onHost
		m.deviceBytes -= ManagedPageSize
	}
	if m.head > len(m.order)/2 {
		m.compact()
	}
	return evicted
}

// recordEvictions records in the ledger the pages evicted to make room: a DtoH
// copy of each on accounting.PathMigrated, and their count.
func (d *Device) recordEvictions(led *accounting.Ledger, evicted int64) {
	if evicted == 0 {
		return
	}
	led.RecordEvictions(evicted)
	led.RecordCopy(accounting.DtoH, accounting.PathMigrated, evicted*ManagedPageSize, 0)
}

// residentBytes is the bytes of mapped managed pages resident on the
// device.
func (m *managedState) residentBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deviceBytes
}

// managedRoom is the device memory managed pages may take: the arena's
// free bytes. The caller holds d.mu for reading.
func (d *Device) managedRoom() int64 { return d.arena.size - d.arena.used }
