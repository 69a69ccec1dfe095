package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testrand"
)

// A kernel's faults on every range and allocation it touched are one
// fault buffer: booked once, in as few batches of FaultBatch as hold them
// (Link.bookMigration), not a batch per range. The link's end time is
// exact on a fresh link: the work's start, the batches' service, then the
// bytes at the page-locked rate. A host's faults cost one each.
func TestCrossingBooksAKernelOnce(t *testing.T) {
	r := testrand.For(t)
	const service, hostService = 7 * time.Millisecond, 3 * time.Microsecond
	for _, tc := range []struct {
		name        string
		allocs      int // managed allocations, one range each
		pagesEach   int
		wantBatches int64
	}{
		{"one range of one page", 1, 1, 1},
		{"three ranges of one page", 3, 1, 1},
		{"two ranges filling a batch", 2, FaultBatch / 2, 1},
		{"two ranges a page past a batch", 2, FaultBatch/2 + 1, 2},
		{"random ranges", 2 + r.IntN(6), 1 + r.IntN(100), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := &Link{PinnedGBps: 1 + 99*r.Float64(), PageableGBps: 1, DeviceFaultService: service, HostFaultService: hostService}
			d, err := New(Config{Memory: 64 << 20, Link: link})
			require.NoError(t, err)
			defer d.Close()
			var ranges []driver.Range
			for range tc.allocs {
				n := int64(tc.pagesEach) * ManagedPageSize
				p, err := d.MallocManaged(n, devarray.AttachGlobal)
				require.NoError(t, err)
				ranges = append(ranges, driver.Range{Ptr: p, N: n})
			}
			pages := int64(tc.allocs * tc.pagesEach)
			batches := tc.wantBatches
			if batches < 0 {
				batches = (pages + FaultBatch - 1) / FaultBatch
			}
			d.mu.RLock()
			for _, rg := range ranges { // the host writes every page first: each a host fault
				d.migrate(d.managed.allocs[uintptr(rg.Ptr)], 0, tc.pagesEach, onHost, true, false)
			}
			c := d.touchRanges(ranges) // host-resident: every page faults in and crosses
			d.mu.RUnlock()
			assert.Equal(t, pages, c.faults[accounting.HtoD])
			assert.Equal(t, pages*ManagedPageSize, c.bytes[accounting.HtoD])
			bytesTime := time.Duration(float64(pages*ManagedPageSize) / link.PinnedGBps)
			assert.Equal(t, c.start.Add(time.Duration(batches)*service+bytesTime), d.cross(c), "%d faults: %d batches", pages, batches)

			d.mu.RLock()
			back := d.cross(d.migrate(d.managed.allocs[uintptr(ranges[0].Ptr)], 0, tc.pagesEach, onHost, false, false))
			d.mu.RUnlock()
			assert.False(t, back.IsZero(), "the host's faults cross too")
			assert.Equal(t, int64(2*pages)+int64(tc.pagesEach), d.Ledger().Managed().Faults)
			assert.Equal(t, pages*ManagedPageSize, d.Ledger().Snapshot().Copies[accounting.HtoD][accounting.PathMigrated].Bytes)
		})
	}
}

// Crossings add up per direction, from the earliest start.
func TestCrossingAdds(t *testing.T) {
	r := testrand.For(t)
	t0 := time.Now()
	var sum crossing
	var want crossing
	for i := range 5 + r.IntN(5) {
		c := crossing{start: t0.Add(time.Duration(r.IntN(1000)) * time.Microsecond)}
		dir := accounting.HtoD
		if i%2 == 1 {
			dir = accounting.DtoH
		}
		c.bytes[dir], c.faults[dir] = rand.Int64N(1<<30), rand.Int64N(1<<20)
		want.bytes[dir] += c.bytes[dir]
		want.faults[dir] += c.faults[dir]
		if want.start.IsZero() || c.start.Before(want.start) {
			want.start = c.start
		}
		sum.add(c)
	}
	sum.add(crossing{}) // nothing, no start: changes nothing
	assert.Equal(t, want, sum)
}
