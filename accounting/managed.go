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
	// Evictions counts device-resident pages written back to the host to
	// make room on an oversubscribed device, each a DtoH copy of one page
	// on PathMigrated.
	Evictions int64 `json:"evictions"`
	// Uncounted, when not empty, says why the driver's own migrations of
	// managed memory could not be counted (on a GPU: CUPTI could not be
	// loaded or started): the copies on PathMigrated and the faults are
	// then not all there are.
	Uncounted string `json:"uncounted,omitempty"`
}

// managedCounts are a ledger's ManagedStats, counted atomically.
type managedCounts struct {
	faults, duplicates, evictions atomic.Int64
	uncounted                     atomic.Pointer[string]
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

// RecordEvictions counts n managed pages evicted from the device to the
// host. A nil ledger or n ≤ 0 records nothing.
func (l *Ledger) RecordEvictions(n int64) {
	if l != nil && n > 0 {
		l.managed.evictions.Add(n)
	}
}

// SetMigrationsUncounted records why the managed memory migrations that
// the driver makes on its own cannot be counted; the first reason given is
// kept. An empty why or a nil ledger records nothing.
func (l *Ledger) SetMigrationsUncounted(why string) {
	if l != nil && why != "" {
		l.managed.uncounted.CompareAndSwap(nil, &why)
	}
}

// Managed returns the managed memory page events counted so far.
func (l *Ledger) Managed() ManagedStats {
	if l == nil {
		return ManagedStats{}
	}
	m := ManagedStats{Faults: l.managed.faults.Load(), Duplicates: l.managed.duplicates.Load(),
		Evictions: l.managed.evictions.Load()}
	if why := l.managed.uncounted.Load(); why != nil {
		m.Uncounted = *why
	}
	return m
}
