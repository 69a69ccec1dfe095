package sim

import (
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/ptx"
)

// AttachMem attaches the managed allocation at p to the stream with attach
// (cuStreamAttachMemAsync): "For managed allocations, length must be
// either zero or the entire allocation's size", p its start (a guess: the
// page says dptr points to managed memory, and "it is not possible to
// change stream association for a portion of a managed allocation"). The
// entire size is the size cuMemAllocManaged was asked for, not that size
// rounded up to sim's 256-byte allocation unit (a guess, the strict one;
// the conformance row "cuStreamAttachMemAsync of a managed allocation
// with its size rounded up" logs what a GPU answers). "It
// is illegal to attach singly to the NULL stream". The association
// changes in stream order: the call "will only take effect when, previous
// work in stream has completed. Any previous association is automatically
// replaced."
func (s *stream) AttachMem(p devarray.Ptr, n int64, attach devarray.Attach) error {
	d := s.d
	op := fmt.Sprintf("attach %v managed %v", attach, p)
	if d.Closed() {
		return fmt.Errorf("sim: %s: %w", op, driver.ErrClosed)
	}
	switch attach {
	case devarray.AttachGlobal, devarray.AttachHost:
	case devarray.AttachSingle:
		if s == d.legacy {
			return fmt.Errorf("sim: %s: a single attachment to the legacy default stream: %w", op, driver.ErrInvalidValue)
		}
	default:
		return fmt.Errorf("sim: %s: %w", op, driver.ErrInvalidValue)
	}
	if err := d.checkFault(op); err != nil {
		return err
	}
	m := &d.managed
	m.mu.Lock()
	a := m.allocs[uintptr(p)]
	m.mu.Unlock()
	if a == nil || (n != 0 && n != a.asked) {
		return fmt.Errorf("sim: %s: not the start and whole size (or 0) of a managed allocation: %w", op, driver.ErrInvalidValue)
	}
	var on *stream
	if attach == devarray.AttachSingle {
		on = s
	}
	return s.enqueueMarker(func() error {
		m.mu.Lock()
		a.attch, a.on = attach, on
		m.mu.Unlock()
		return nil
	})
}

// detachManaged gives each allocation attached singly to s, which is
// closing after its work, its association from cuMemAllocManaged back:
// "If hStream is destroyed while data is associated with it, the
// association is removed and the association reverts to the default
// visibility of the allocation as specified at cuMemAllocManaged".
func (d *Device) detachManaged(s *stream) {
	m := &d.managed
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.allocs {
		if a.on == s {
			a.attch, a.on = a.def, nil
		}
	}
}

// Prefetch migrates the managed bytes [p, p+n), rounded out to whole
// pages, to loc in the stream's order (cuMemPrefetchAsync): "Passing in
// CU_DEVICE_CPU for dstDevice will prefetch the data to host memory. If
// dstDevice is a GPU, then the device attribute
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS must be non-zero." The
// pages the stream moves when it reaches the prefetch are copies on
// accounting.PathPrefetch; pages never populated are populated there
// without a copy ("If no physical memory has been allocated for this
// region, then this memory region will be populated and mapped on the
// destination device"), and read-mostly pages are duplicated ("If
// CU_MEM_ADVISE_SET_READ_MOSTLY was set on any subset of this memory
// range, then that subset will create a read-only copy of the pages on
// dstDevice"). The last prefetch location a range reads back is set at
// the call: it "gives no indication as to whether the prefetch operation
// to that location has completed or even begun".
func (s *stream) Prefetch(p devarray.Ptr, n int64, loc driver.Location) error {
	d := s.d
	op := fmt.Sprintf("prefetch managed [%v, +%d) to %v", p, n, loc)
	if d.Closed() {
		return fmt.Errorf("sim: %s: %w", op, driver.ErrClosed)
	}
	if err := d.checkLocation(loc, true); err != nil {
		return fmt.Errorf("sim: %s: %w", op, err)
	}
	if err := d.checkFault(op); err != nil {
		return err
	}
	m := &d.managed
	m.mu.Lock()
	a, first, end, err := m.managedRange(p, n)
	if err == nil {
		for i := first; i < end; i++ {
			a.pages[i].lastPrefetch = loc
		}
	}
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sim: %s: %w", op, err)
	}
	return s.enqueue(func() error {
		d.mu.RLock()
		var done time.Time
		if !d.closed {
			done = d.cross(d.migrate(a, first, end, processor(loc), false, true))
		}
		d.mu.RUnlock()
		if !done.IsZero() { // on a modelled link: the prefetch completes when its bytes have crossed
			waitUntil(done)
			s.clock.endAt = done
		}
		return nil
	})
}

// migrate makes pages [first, end) of a resident at processor to, for an
// access (a write when write) or a prefetch: settlePages with every page
// touched alike. It returns what crossed (settlePages).
func (d *Device) migrate(a *managedAlloc, first, end int, to residence, write, prefetch bool) crossing {
	mark := ptx.PageRead
	if write {
		mark = ptx.PageWritten
	}
	return d.settlePages(a, first, end, to, prefetch, func(int) byte { return mark })
}

// settlePages settles each page i of [first, end) of a that mark(i) says
// was touched (ptx.PageRead, ptx.PageWritten; 0: not touched) at
// processor to, and records in the ledger what moved: the bytes of each
// page that crossed, as one copy on PathPrefetch or PathMigrated, each
// page fault (an access to a page not resident at to, or not yet
// populated), each read-only duplicate made, and each page evicted to make
// room for them (managed_evict.go). It returns the bytes that moved and
// the faults, for the caller to book on a modelled link (Config.Link)
// with those of the rest of its work (Device.cross): there the faults'
// service time and then the bytes take their time, the bytes at the
// page-locked rate (Link.bookMigration). (That the driver moves pages at
// the rate of a page-locked copy is a guess: the Programming Guide gives
// migrations no rate; the GPU bench's managed rows measure it.) The
// caller holds d.mu for reading.
func (d *Device) settlePages(a *managedAlloc, first, end int, to residence, prefetch bool, mark func(i int) byte) crossing {
	start := time.Now()
	m := &d.managed
	room := d.managedRoom()
	m.mu.Lock()
	var moved, faults, dups, evicted int64
	for i := first; i < end; i++ {
		k := mark(i)
		if k == 0 || a.freed {
			continue
		}
		wasOn := a.pages[i].at & onDevice
		c := a.pages[i].settle(to, k&ptx.PageWritten != 0, prefetch)
		moved, faults, dups = moved+c.moved, faults+c.fault, dups+c.duplicate
		evicted += m.moved(a, i, wasOn, room)
	}
	m.mu.Unlock()
	led := d.managedLedger()
	led.RecordPageFaults(faults)
	led.RecordReadDuplicates(dups)
	d.recordEvictions(led, evicted)
	dir, path := accounting.HtoD, accounting.PathMigrated
	if to == onHost {
		dir = accounting.DtoH
	}
	if prefetch {
		path = accounting.PathPrefetch
	}
	if moved > 0 {
		led.RecordCopy(dir, path, moved*ManagedPageSize, time.Since(start))
	}
	c := crossing{start: start}
	c.bytes[dir], c.faults[dir] = moved*ManagedPageSize, faults
	return c
}
