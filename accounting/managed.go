package accounting

import "sync/atomic"

// ManagedStats are a ledger's counts of managed (unified) memory's page
// events; the bytes the driver moved are copies on PathPrefetch and
// PathMigrated.
type ManagedStats struct {
	// Faults counts page faults: a processor touched a managed page
	// resident elsewhere, or not yet populated.
	Faults int64 `json:"faults"`
	// Duplicates counts read-only copies of read-mostly pages made where
	// they were read (or prefetched to), each page once per copy.
	Duplicates int64 `json:"duplicates"`
}

// managedCounts are a ledger's ManagedStats, counted atomically.
type managedCounts struct {
	faults, duplicates atomic.Int64
}

// RecordPageFaults counts n page faults of managed memory. A nil ledger
// or n ≤ 0 records nothing.
func (l *Ledger) RecordPageFaults(n int64) {
	if l != nil && n > 0 {
		l.managed.faults.Add(n)
	}
}

// RecordReadDuplicates counts n read-only copies of read-mostly managed
// pages. A nil ledger or n ≤ 0 records nothing.
func (l *Ledger) RecordReadDuplicates(n int64) {
	if l != nil && n > 0 {
		l.managed.duplicates.Add(n)
	}
}

// Managed returns the managed memory page events counted so far.
func (l *Ledger) Managed() ManagedStats {
	if l == nil {
		return ManagedStats{}
	}
	return ManagedStats{Faults: l.managed.faults.Load(), Duplicates: l.managed.duplicates.Load()}
}
