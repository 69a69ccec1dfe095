//go:build cuda

package cuda

import (
	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/cuda/cupti"
)

// recordMigrations records in led what the driver migrated of managed
// memory between two of CUPTI's running totals, prev and next: the bytes
// an explicit prefetch moved (migration cause "user") as one copy on
// accounting.PathPrefetch per direction, the other bytes between host and
// device (faults, the driver's own speculative prefetches, evictions) as one
// copy on accounting.PathMigrated, bytes between devices as one Peer copy on
// PathMigrated, and the CPU's and GPU's page faults. A direction with no
// bytes since prev records no copy: a GPU's figures are CUPTI's sums, so
// its ledger counts a copy per flush that saw bytes move, not a copy per
// page as sim's does.
func recordMigrations(led *accounting.Ledger, prev, next cupti.Totals) {
	copies := []struct {
		dir  accounting.Direction
		path accounting.Path
		n    int64
	}{
		{accounting.HtoD, accounting.PathPrefetch, next.PrefetchedHtoD - prev.PrefetchedHtoD},
		{accounting.DtoH, accounting.PathPrefetch, next.PrefetchedDtoH - prev.PrefetchedDtoH},
		{accounting.HtoD, accounting.PathMigrated, (next.BytesHtoD - next.PrefetchedHtoD) - (prev.BytesHtoD - prev.PrefetchedHtoD)},
		{accounting.DtoH, accounting.PathMigrated, (next.BytesDtoH - next.PrefetchedDtoH) - (prev.BytesDtoH - prev.PrefetchedDtoH)},
		{accounting.Peer, accounting.PathMigrated, next.BytesDtoD - prev.BytesDtoD},
	}
	for _, c := range copies {
		if c.n > 0 {
			led.RecordCopy(c.dir, c.path, c.n, 0)
		}
	}
	led.RecordPageFaults((next.CPUPageFaults + next.GPUPageFaults) - (prev.CPUPageFaults + prev.GPUPageFaults))
}
