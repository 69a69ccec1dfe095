package sim

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Managed (unified) memory (cuMemAllocManaged, cuMemAdvise,
// cuMemRangeGetAttributes, cuStreamAttachMemAsync, cuMemPrefetchAsync) on
// sim's own memory: a managed allocation is an arena allocation, counted
// under accounting.Managed, whose bytes sim keeps in one place as it keeps
// all memory; what sim adds is where each page of it would live on a GPU
// (residency.go), and the advice and stream association the Driver API
// lets a program set, each sentence quoted where it is kept. The sentences
// are from the CUDA Driver API reference (cuda.h, CUDA 11.8).

// ManagedPageSize is the page by which sim and the emulated driver keep
// managed memory's residency, advice and prefetches: the CPU page of
// x86-64 Linux. cuMemAdvise and cuMemPrefetchAsync round their ranges to
// it: "The start address and end address of the memory range will be
// rounded down and rounded up respectively to be aligned to CPU page size".
// The granularity a GPU migrates by on a fault is not documented (the
// driver groups pages); counting one page per fault is a guess, the
// smallest plausible one, that a conformance row observes on a GPU. Pages
// are counted from each allocation's start, which sim aligns to 256 bytes
// only: a page never spans two allocations.
const ManagedPageSize = 4096

// managedAlloc is one managed allocation. Its fields are guarded by the
// device's managedState.mu.
type managedAlloc struct {
	base  uintptr
	size  int64           // the ledger's bytes
	asked int64           // the bytes cuMemAllocManaged was asked for
	def   devarray.Attach // the association cuMemAllocManaged gave
	attch devarray.Attach // the association now
	on    *stream         // the stream of an AttachSingle association, else nil
	pages []managedPage
	// mem is the allocation's own mapping where it may oversubscribe the
	// device (managed_evict.go); nil where it lives in the arena.
	mem   []byte
	freed bool // a mapped allocation was freed: its pages leave the eviction order
}

// managedPage is where one page of a managed allocation lives, and the
// advice it was given.
type managedPage struct {
	at           residence
	readMostly   bool
	preferred    driver.Location
	lastPrefetch driver.Location
	accessedBy   residence // the processors AdviseAccessedBy named
	stamp        uint64    // when it last moved to the device, in the eviction order
}

// residence is a set of processors that hold a page: none (not populated
// yet), the host, the device, or both (read-mostly duplicates).
type residence uint8

const (
	onHost   residence = 1
	onDevice residence = 2
)

// managedState is a device's managed allocations. mu is a leaf: nothing
// else is locked while it is held.
type managedState struct {
	active atomic.Bool                       // a managed allocation was made: device work looks for managed pages from then on
	ledger atomic.Pointer[accounting.Ledger] // SetManagedLedger's, or nil
	// orphaned: a stream was closed with work the host never synchronized;
	// until the device is synchronized, the GPU may still be active
	// (managed_host.go).
	orphaned atomic.Bool
	mu       sync.Mutex
	allocs   map[uintptr]*managedAlloc
	// The device-resident pages of mapped allocations: their bytes, and
	// the order they moved there in (order[head:], stale entries
	// included), for eviction (managed_evict.go).
	deviceBytes int64
	order       []residentPage
	head        int
	clock       uint64
}

// ConcurrentManagedAccess reports whether the device lets the host touch
// managed memory while it runs work
// (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS): yes, as the H100 and
// H200 on Linux, unless Config.NoConcurrentManagedAccess.
func (d *Device) ConcurrentManagedAccess() bool { return !d.cfg.NoConcurrentManagedAccess }

// MallocManaged allocates nbytes of managed memory attached with attach
// (cuMemAllocManaged): "flags must be one of CU_MEM_ATTACH_GLOBAL or
// CU_MEM_ATTACH_HOST", and "If bytesize is 0, cuMemAllocManaged returns
// CUDA_ERROR_INVALID_VALUE". Its pages are populated where first touched:
// "managed memory may not be populated when this API returns and instead
// may be populated on access". The ledger counts it under
// accounting.Managed; Free frees it.
func (d *Device) MallocManaged(nbytes int64, attach devarray.Attach) (devarray.Ptr, error) {
	if nbytes <= 0 || (attach != devarray.AttachGlobal && attach != devarray.AttachHost) {
		return 0, fmt.Errorf("sim: malloc managed %d bytes attached %v: %w", nbytes, attach, driver.ErrInvalidValue)
	}
	a, err := d.allocManaged(nbytes)
	if err != nil {
		return 0, err
	}
	a.asked, a.def, a.attch, a.pages = nbytes, attach, attach, make([]managedPage, wholePages(a.size)/ManagedPageSize)
	for i := range a.pages {
		a.pages[i].preferred, a.pages[i].lastPrefetch = driver.NoLocation, driver.NoLocation
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		// Close freed an arena allocation already; a mapping is this call's to give back.
		if a.mem != nil {
			unmapManaged(a)
			d.ledger.Free(accounting.Managed, a.base, a.size)
		}
		return 0, fmt.Errorf("sim: malloc managed: %w", driver.ErrClosed)
	}
	m := &d.managed
	m.mu.Lock()
	if m.allocs == nil {
		m.allocs = make(map[uintptr]*managedAlloc)
	}
	m.allocs[a.base] = a
	m.active.Store(true)
	m.mu.Unlock()
	return devarray.Ptr(a.base), nil
}

// allocManaged allocates the bytes of a managed allocation of nbytes: a
// mapping of its own on a device with concurrent managed access, which
// may oversubscribe it (managed_evict.go) but not the host's memory and
// swap (the OS would map more without backing, and the page table sim
// keeps for it grows with its size), else device memory. Refusing more
// than the host can back is a guess, the strict one: the Programming Guide
// promises oversubscription of the device only; the conformance row
// "cuMemAllocManaged of a page more than the host's memory and swap" logs
// what a GPU answers.
func (d *Device) allocManaged(nbytes int64) (*managedAlloc, error) {
	if !d.ConcurrentManagedAccess() {
		p, err := d.malloc(nbytes, accounting.Managed)
		if err != nil {
			return nil, err
		}
		return &managedAlloc{base: uintptr(p), size: alignUp(nbytes)}, nil
	}
	if d.Closed() {
		return nil, fmt.Errorf("sim: malloc managed: %w", driver.ErrClosed)
	}
	if err := d.checkFault("malloc managed"); err != nil {
		return nil, err
	}
	if injected(&d.allocCountdown) {
		return nil, fmt.Errorf("sim: malloc managed %d bytes: %w", nbytes, driver.ErrInjected)
	}
	if host, ok := hostMemory(); ok && nbytes > host {
		d.ledger.RecordFailure(accounting.Managed, nbytes)
		return nil, fmt.Errorf("sim: malloc managed %s: more than the host's memory and swap, %s, can back: %w",
			accounting.FormatBytes(nbytes), accounting.FormatBytes(host), driver.ErrOutOfMemory)
	}
	return d.mallocMapped(alignUp(nbytes))
}

// forgetManaged forgets the managed allocation at p, freed: the ledger
// kind its bytes are counted under, accounting.Managed, or
// accounting.Device when p was not managed.
func (d *Device) forgetManaged(p uintptr) accounting.Kind {
	m := &d.managed
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.allocs[p]; !ok {
		return accounting.Device
	}
	delete(m.allocs, p)
	return accounting.Managed
}

// managedRange returns the managed allocation that holds [p, p+n) and the
// pages the range touches, rounded out to whole pages. The caller holds
// m.mu. "The memory range must refer to managed memory allocated via
// cuMemAllocManaged" (cuMemAdvise, cuMemPrefetchAsync,
// cuMemRangeGetAttribute); a range of 0 bytes, or one that runs past its
// allocation, is refused (CUDA_ERROR_INVALID_VALUE, a guess: the strict
// reading).
func (m *managedState) managedRange(p devarray.Ptr, n int64) (*managedAlloc, int, int, error) {
	addr := uintptr(p)
	for base, a := range m.allocs {
		if addr >= base && addr < base+uintptr(a.size) {
			off := int64(addr - base)
			if n <= 0 || n > a.size-off {
				break
			}
			return a, int(off / ManagedPageSize), int((off + n + ManagedPageSize - 1) / ManagedPageSize), nil
		}
	}
	return nil, 0, 0, fmt.Errorf("bytes [%v, +%d) are not inside one managed allocation: %w", p, n, driver.ErrInvalidValue)
}

// checkLocation checks that loc names the host or this device, and, where
// the rule needs it, a device with concurrent managed access.
func (d *Device) checkLocation(loc driver.Location, needConcurrent bool) error {
	switch {
	case loc == driver.HostLocation:
		return nil
	case loc != driver.Location(d.cfg.Ordinal):
		return fmt.Errorf("%v is neither the host nor %v: %w", loc, d.DeviceID(), driver.ErrInvalidValue)
	case needConcurrent && !d.ConcurrentManagedAccess():
		return fmt.Errorf("%v has no concurrent managed access: %w", d.DeviceID(), driver.ErrInvalidValue)
	}
	return nil
}

// processor is the residence bit of a location.
func processor(loc driver.Location) residence {
	if loc == driver.HostLocation {
		return onHost
	}
	return onDevice
}

// Advise gives advice a for the managed bytes [p, p+n), rounded out to
// whole pages, for location loc (cuMemAdvise). Preferred location and
// accessed-by name the host or this device, and "If device is a GPU, then
// it must have a non-zero value for the device attribute
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS"; read-mostly ignores loc:
// "The device argument is ignored for this advice". Unsetting read-mostly
// collapses each duplicated page into one copy: "The location for the
// collapsed copy will be the preferred location if the page has a
// preferred location and one of the read-duplicated copies was resident at
// that location. Otherwise, the location chosen is arbitrary" (sim
// chooses the device).
func (d *Device) Advise(p devarray.Ptr, n int64, a driver.Advice, loc driver.Location) error {
	if d.Closed() {
		return fmt.Errorf("sim: advise %v: %w", a, driver.ErrClosed)
	}
	switch a {
	case driver.AdviseReadMostly, driver.AdviseUnsetReadMostly, driver.AdviseUnsetPreferredLocation:
	case driver.AdvisePreferredLocation, driver.AdviseAccessedBy, driver.AdviseUnsetAccessedBy:
		if err := d.checkLocation(loc, a != driver.AdviseUnsetAccessedBy); err != nil {
			return fmt.Errorf("sim: advise %v: %w", a, err)
		}
	default:
		return fmt.Errorf("sim: advise %v: %w", a, driver.ErrInvalidValue)
	}
	m := &d.managed
	m.mu.Lock()
	defer m.mu.Unlock()
	al, first, end, err := m.managedRange(p, n)
	if err != nil {
		return fmt.Errorf("sim: advise %v: %w", a, err)
	}
	for i := first; i < end; i++ {
		pg := &al.pages[i]
		switch a {
		case driver.AdviseReadMostly:
			pg.readMostly = true
		case driver.AdviseUnsetReadMostly:
			pg.readMostly = false
			if pg.at == onHost|onDevice {
				pg.at = onDevice
				if pg.preferred == driver.HostLocation {
					pg.at = onHost
				}
				m.moved(al, i, onDevice, 0)
			}
		case driver.AdvisePreferredLocation:
			pg.preferred = loc
		case driver.AdviseUnsetPreferredLocation:
			pg.preferred = driver.NoLocation
		case driver.AdviseAccessedBy:
			pg.accessedBy |= processor(loc)
		case driver.AdviseUnsetAccessedBy:
			pg.accessedBy &^= processor(loc)
		}
	}
	return nil
}

// RangeAttributes reads back the attributes of the managed bytes
// [p, p+n), rounded out to whole pages (cuMemRangeGetAttributes), each as
// cuMemRangeGetAttribute defines it: read-mostly "1 if all pages in the
// given memory range have read-duplication enabled"; the preferred
// location "CU_DEVICE_INVALID if either all the pages don't have the same
// preferred location or some of the pages don't have a preferred location
// at all"; accessed-by "a list of device ids that had
// CU_MEM_ADVISE_SET_ACCESSED_BY set for that entire memory range"; the
// last prefetch location "the last location to which all pages in the
// memory range were prefetched explicitly".
func (d *Device) RangeAttributes(p devarray.Ptr, n int64) (driver.RangeAttributes, error) {
	if d.Closed() {
		return driver.RangeAttributes{}, fmt.Errorf("sim: range attributes: %w", driver.ErrClosed)
	}
	m := &d.managed
	m.mu.Lock()
	defer m.mu.Unlock()
	al, first, end, err := m.managedRange(p, n)
	if err != nil {
		return driver.RangeAttributes{}, fmt.Errorf("sim: range attributes: %w", err)
	}
	pages := al.pages[first:end]
	ra := driver.RangeAttributes{ReadMostly: true, PreferredLocation: pages[0].preferred, LastPrefetchLocation: pages[0].lastPrefetch}
	accessed := onHost | onDevice
	for _, pg := range pages {
		ra.ReadMostly = ra.ReadMostly && pg.readMostly
		if pg.preferred != ra.PreferredLocation {
			ra.PreferredLocation = driver.NoLocation
		}
		if pg.lastPrefetch != ra.LastPrefetchLocation {
			ra.LastPrefetchLocation = driver.NoLocation
		}
		accessed &= pg.accessedBy
	}
	if accessed&onHost != 0 {
		ra.AccessedBy = append(ra.AccessedBy, driver.HostLocation)
	}
	if accessed&onDevice != 0 {
		ra.AccessedBy = append(ra.AccessedBy, driver.Location(d.cfg.Ordinal))
	}
	return ra, nil
}

// IsManaged reports whether p lies in a live managed allocation (the
// emulated driver's CU_POINTER_ATTRIBUTE_IS_MANAGED).
func (d *Device) IsManaged(p devarray.Ptr) bool {
	m := &d.managed
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _, _, err := m.managedRange(p, 1)
	return err == nil
}

// SetManagedLedger makes l the ledger that counts the page faults,
// duplicates and migrations of the device's managed memory (nil: the
// device's own): the emulated CUDA driver hands it the cuda backend's, as
// a GPU's counters reach that backend's ledger.
func (d *Device) SetManagedLedger(l *accounting.Ledger) { d.managed.ledger.Store(l) }

// managedLedger is the ledger managed memory's page events are counted in.
func (d *Device) managedLedger() *accounting.Ledger {
	if l := d.managed.ledger.Load(); l != nil {
		return l
	}
	return d.ledger
}
