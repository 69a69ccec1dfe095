package ptx

// PageMarker is a Memory that learns which pages of some allocations a
// run touches: sim keeps managed memory's residency per page by it, as a
// GPU's page faults do. A run asks for an allocation's marks when it
// first uses the allocation and, for each global access there, sets
// PageRead or PageWritten in the byte of every page the access touches.
type PageMarker interface {
	Memory
	// PageMarks returns the marks of the allocation at base, one byte per
	// page of 1<<shift bytes from base, or nil for an allocation whose
	// pages are not followed.
	PageMarks(base uint64) (marks []byte, shift uint)
}

// The bits of a page's mark.
const (
	PageRead    byte = 1 // a thread read the page (an atomic reads and writes it)
	PageWritten byte = 2 // a thread wrote the page
)

// markPages marks the pages of e that n bytes at offset off touch.
//
//go:norace
func (e *allocEntry) markPages(off uint64, n int, write, atomic bool) {
	bit := PageRead
	if write {
		bit = PageWritten
		if atomic {
			bit |= PageRead
		}
	}
	last := (off + uint64(n) - 1) >> e.shift
	for pg := off >> e.shift; pg <= last && pg < uint64(len(e.pages)); pg++ {
		e.pages[pg] |= bit
	}
}
