package sim

import "github.com/cuarray/cuarray/device/driver"

// pageChange is what settling one page cost: a page's bytes moved, a page
// fault, a read-only duplicate made (each 0 or 1).
type pageChange struct{ moved, fault, duplicate int64 }

// settle makes the page resident at processor to for an access (a write
// when write) or a prefetch, by the Unified Memory rules of the Driver
// API (cuMemAdvise, cuMemPrefetchAsync):
//
//   - A page not yet populated is populated at to, with a fault when an
//     access touches it and no copy.
//   - A page resident at to stays; a write there makes it resident there
//     alone: "If any processor writes to this region, all copies of the
//     corresponding page will be invalidated except for the one where the
//     write occurred."
//   - A page at its preferred location that to has AdviseAccessedBy for
//     stays where it is, and the access takes no fault: the advice "causes
//     the data to always be mapped in the specified processor's page
//     tables", and "If the data is already in its preferred location and
//     the faulting processor can establish a mapping without requiring the
//     data to be migrated, then data migration will be avoided." A
//     prefetch moves it all the same: "setting the preferred location does
//     not prevent data prefetching".
//   - Else the page moves to to, with a fault when an access moved it; a
//     read-mostly page read or prefetched is copied, not moved: "Any read
//     accesses from any processor to this region will create a read-only
//     copy of at least the accessed pages in that processor's memory".
func (pg *managedPage) settle(to residence, write, prefetch bool) pageChange {
	var c pageChange
	switch {
	case pg.at == 0:
		pg.at = to
		if !prefetch {
			c.fault = 1
		}
	case pg.at&to != 0:
		if write {
			pg.at = to
		}
	case !prefetch && pg.accessedBy&to != 0 && pg.preferred != driver.NoLocation && pg.at == processor(pg.preferred):
	default:
		c.moved = 1
		if !prefetch {
			c.fault = 1
		}
		if pg.readMostly && !write {
			pg.at |= to
			c.duplicate = 1
		} else {
			pg.at = to
		}
	}
	return c
}
