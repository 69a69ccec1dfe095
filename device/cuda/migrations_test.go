//go:build cuda

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/cuda/cupti"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// CUPTI's running totals become the ledger's copies on PathPrefetch and
// PathMigrated and its page faults, from one flush to the next: a prefetch's
// bytes (cause "user") apart from the rest, nothing counted twice, and a
// flush that saw nothing move records no copy.
func TestRecordMigrations(t *testing.T) {
	r := rand.For(t)
	n := func() int64 { return 1 + r.Int64N(1<<30) }
	pre, mig, back, dtod := n(), n(), n(), n()
	prefBack := back / 2
	cpu, gpu := n()%1000, n()%1000
	steps := []struct {
		name   string
		add    cupti.Totals // what moved since the last flush
		copies map[[2]int]int64
		faults int64
	}{
		{name: "nothing moved"},
		{name: "a prefetch to the device",
			add:    cupti.Totals{BytesHtoD: pre, PrefetchedHtoD: pre},
			copies: map[[2]int]int64{{int(accounting.HtoD), int(accounting.PathPrefetch)}: pre}},
		{name: "a kernel's faults",
			add:    cupti.Totals{BytesHtoD: mig, GPUPageFaults: gpu},
			copies: map[[2]int]int64{{int(accounting.HtoD), int(accounting.PathMigrated)}: mig}, faults: gpu},
		{name: "the host's reads and a prefetch back",
			add: cupti.Totals{BytesDtoH: back, PrefetchedDtoH: prefBack, CPUPageFaults: cpu},
			copies: map[[2]int]int64{{int(accounting.DtoH), int(accounting.PathPrefetch)}: prefBack,
				{int(accounting.DtoH), int(accounting.PathMigrated)}: back - prefBack}, faults: cpu},
		{name: "between devices",
			add:    cupti.Totals{BytesDtoD: dtod},
			copies: map[[2]int]int64{{int(accounting.Peer), int(accounting.PathMigrated)}: dtod}},
		{name: "nothing moved again"},
	}
	led := accounting.NewLedger("cuda:0")
	var total cupti.Totals
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			next := total
			next.BytesHtoD += st.add.BytesHtoD
			next.PrefetchedHtoD += st.add.PrefetchedHtoD
			next.BytesDtoH += st.add.BytesDtoH
			next.PrefetchedDtoH += st.add.PrefetchedDtoH
			next.BytesDtoD += st.add.BytesDtoD
			next.CPUPageFaults += st.add.CPUPageFaults
			next.GPUPageFaults += st.add.GPUPageFaults
			before := led.Snapshot()
			recordMigrations(led, total, next)
			total = next
			d := accounting.Diff(before, led.Snapshot())
			for dir := accounting.Direction(0); dir < accounting.NumDirections; dir++ {
				for p := accounting.Path(0); p < accounting.NumPaths; p++ {
					want := st.copies[[2]int{int(dir), int(p)}]
					got := d.Copies[dir][p]
					assert.Equal(t, want, got.Bytes, "%v on %v", dir, p)
					if want > 0 {
						assert.Equal(t, int64(1), got.Count, "%v on %v: one copy a flush", dir, p)
					} else {
						assert.Zero(t, got.Count, "%v on %v", dir, p)
					}
				}
			}
			assert.Equal(t, st.faults, d.Managed.Faults)
		})
	}
}
