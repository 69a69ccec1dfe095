package sim

import (
	"time"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/ptx"
)

// How device work moves managed pages: an interpreted kernel marks the
// pages it reads and writes (ptx.PageMarker), a Go kernel touches the
// ranges it declares, a 1-D copy (HtoD, DtoH, DtoD) or a memset the bytes
// it reads or writes, a pitched 2-D or 3-D copy the pages of its rows
// (peer copies move no page yet); once the work has run, each page touched settles on the
// device (settle), which records the faults and migrations in the ledger.

// managedPageShift is log2(ManagedPageSize).
const managedPageShift = 12

// KernelMemory is the global memory of an interpreted kernel that
// LaunchInterpreted runs: the device's live allocations (Lookup), and the
// marks of the pages the kernel touches in managed allocations
// (ptx.PageMarker). It is for the one goroutine that runs the kernel.
type KernelMemory struct {
	d       *Device
	touched map[uint64]*pageMarks
}

// pageMarks are the marks of one managed allocation's pages.
type pageMarks struct {
	a     *managedAlloc
	marks []byte
}

var _ ptx.PageMarker = (*KernelMemory)(nil)

// Lookup finds the live allocation that holds addr (a Resolver). The
// caller holds d.mu for reading, as LaunchInterpreted does while its
// kernel runs.
func (m *KernelMemory) Lookup(addr uint64) (uint64, []byte, bool) { return m.d.resolve(addr) }

// PageMarks returns the marks of the managed allocation at base, nil for
// other memory.
func (m *KernelMemory) PageMarks(base uint64) ([]byte, uint) {
	if !m.d.managed.active.Load() {
		return nil, 0
	}
	if t, ok := m.touched[base]; ok {
		return t.marks, managedPageShift
	}
	ms := &m.d.managed
	ms.mu.Lock()
	a := ms.allocs[uintptr(base)]
	ms.mu.Unlock()
	if a == nil {
		return nil, 0
	}
	if m.touched == nil {
		m.touched = make(map[uint64]*pageMarks)
	}
	t := &pageMarks{a: a, marks: make([]byte, len(a.pages))}
	m.touched[base] = t
	return t.marks, managedPageShift
}

// settle settles on the device every page the kernel touched, and
// returns when the modelled link is done with the bytes that moved and
// the faults, booked once for the whole kernel (Device.cross).
func (m *KernelMemory) settle() time.Time {
	var c crossing
	for _, t := range m.touched {
		c.add(m.d.settlePages(t.a, 0, len(t.marks), onDevice, false, func(i int) byte { return t.marks[i] }))
	}
	return m.d.cross(c)
}

// touchDevice settles on the device the managed pages that device work
// touching [p, p+n) (a write when write) touched; other memory is left
// as it is. It returns what crossed (settlePages), for the caller to book
// with the rest of its work (Device.cross).
func (d *Device) touchDevice(p devarray.Ptr, n int64, write bool) crossing {
	if !d.managed.active.Load() || n <= 0 {
		return crossing{}
	}
	m := &d.managed
	m.mu.Lock()
	a, first, end, err := m.managedRange(p, n)
	m.mu.Unlock()
	if err != nil {
		return crossing{}
	}
	return d.migrate(a, first, end, onDevice, write, false)
}

// touchPitched is touchDevice for the rows a pitched copy touches at pl,
// when pl is device memory inside one managed allocation: depth slices of
// height rows of width bytes, the rows pitch bytes apart and the slices
// pitch × sliceHeight (a write when write). Only the pages the rows touch
// settle, not those between them. That a copy migrates the pages it
// touches, as a 1-D copy does here, is a guess: the Programming Guide
// speaks of the pages a processor's accesses fault in, not of what a copy
// engine's do; on a GPU only CUPTI's counters would tell. The caller
// checked the region (Device.region) and holds d.mu for reading.
func (d *Device) touchPitched(pl devarray.Place, pitch, sliceHeight, width, height, depth int64, write bool) crossing {
	if pl.OnHost() || !d.managed.active.Load() || width <= 0 || height <= 0 || depth <= 0 {
		return crossing{}
	}
	span := (depth-1)*pitch*sliceHeight + (height-1)*pitch + width
	m := &d.managed
	m.mu.Lock()
	a, first, end, err := m.managedRange(pl.Dev, span)
	m.mu.Unlock()
	if err != nil {
		return crossing{}
	}
	mark := ptx.PageRead
	if write {
		mark = ptx.PageWritten
	}
	marks := make([]byte, end-first)
	off := int64(uintptr(pl.Dev) - a.base)
	for z := range depth {
		for y := range height {
			row := off + z*pitch*sliceHeight + y*pitch
			for pg := row / ManagedPageSize; pg <= (row+width-1)/ManagedPageSize; pg++ {
				marks[int(pg)-first] = mark
			}
		}
	}
	return d.settlePages(a, first, end, onDevice, false, func(i int) byte { return marks[i-first] })
}

// touchRanges is touchDevice for each range a Go kernel declares: it
// writes those not read-only.
func (d *Device) touchRanges(ranges []driver.Range) crossing {
	var c crossing
	for _, r := range ranges {
		c.add(d.touchDevice(r.Ptr, r.N, !r.ReadOnly))
	}
	return c
}
