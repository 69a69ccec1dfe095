package sim

import (
	"time"

	"github.com/cuarray/cuarray/accounting"
)

// crossing is what one piece of device or host work put on the modelled
// link by moving managed pages (settlePages): the bytes moved and the page
// faults taken in each direction (indexed by accounting.HtoD and DtoH),
// and when the work began. A kernel, a copy or a memset adds up the
// crossings of every range and allocation it touched (add) and books them
// once (Device.cross), so that its faults are serviced as one fault
// buffer: in as few batches of FaultBatch as hold them, as the driver
// fetches them (Link.bookMigration).
type crossing struct {
	bytes, faults [2]int64
	start         time.Time
}

// add adds o's bytes and faults to c's, from the earlier start.
func (c *crossing) add(o crossing) {
	for dir := range c.bytes {
		c.bytes[dir] += o.bytes[dir]
		c.faults[dir] += o.faults[dir]
	}
	if c.start.IsZero() || (!o.start.IsZero() && o.start.Before(c.start)) {
		c.start = o.start
	}
}

// cross books c on the device's modelled link, each direction once, and
// returns when the link is done with it, for the caller to wait for once
// it has let go of d.mu (waitUntil); the zero time without a link or with
// nothing to book.
func (d *Device) cross(c crossing) time.Time {
	var done time.Time
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		if end, ok := d.cfg.Link.bookMigration(dir, c.bytes[dir], c.faults[dir], c.start); ok {
			done = latest(done, end)
		}
	}
	return done
}
