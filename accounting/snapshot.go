package accounting

import (
	"encoding/json"
	"fmt"
	"time"
)

// KindStats are the counts of one memory kind.
type KindStats struct {
	Current   int64 `json:"current"`         // bytes in use (in a scope: net change)
	Peak      int64 `json:"peak"`            // highest bytes in use (in a scope: above Base)
	Allocs    int64 `json:"allocs"`          // successful allocations
	Frees     int64 `json:"frees"`           // frees
	Allocated int64 `json:"allocated_bytes"` // bytes allocated in all
	Freed     int64 `json:"freed_bytes"`     // bytes freed in all
	Failed    int64 `json:"failed"`          // allocations refused (limit or device)
	Cached    int64 `json:"cached"`          // bytes of Current a caching pool holds but has not handed out (the ledger's, in scopes too)
	Limit     int64 `json:"limit"`           // the ledger's limit, 0 for none
	Base      int64 `json:"base"`            // bytes in use when the scope began (0 for the ledger)
}

// CopyStats are the counts of one copy direction and path.
type CopyStats struct {
	Count   int64   `json:"count"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// Snapshot is a copy of a ledger's or a scope's counters at one moment.
// Index Kinds by Kind and Copies by Direction and Path.
type Snapshot struct {
	Name    string
	Taken   time.Time
	Kinds   [NumKinds]KindStats
	Copies  [NumDirections][NumPaths]CopyStats
	Memsets CopyStats
	// Kernels are the kernel launches per kernel name, sorted by name;
	// nil when none was launched.
	Kernels []KernelStats
	// Pools are the device's stream-ordered pools' figures (SetPools),
	// sorted by name; nil for a scope, and where the device reports none.
	Pools []PoolStats
	// Managed are managed memory's page faults, read duplicates and evictions (the
	// ledger's; zero for a scope). The bytes the driver moved are Copies
	// on PathPrefetch and PathMigrated.
	Managed ManagedStats
}

// Snapshot returns the ledger's counters now. The snapshot is consistent:
// taken while other goroutines record, it sees each event whole or not at
// all, and with every event it sees, every event that happened before it
// (an allocation with its free, a scope's counts with its parent's). It
// holds recording up while it reads, a few microseconds.
func (l *Ledger) Snapshot() Snapshot {
	if l == nil {
		return Snapshot{Taken: time.Now()}
	}
	pools := l.poolStats() // before the freeze: the device's figures, read without recording
	l.freeze()
	defer l.thaw()
	var t counts
	if set := l.shards.Load(); set != nil {
		t = set.sum()
	}
	var peak [NumKinds]int64
	for k := range peak {
		peak[k] = l.levels[k].peak.Load()
	}
	s := t.snapshot(l.name, l, [NumKinds]int64{}, peak, false)
	s.Kernels = l.launches.kernels()
	s.Pools = pools
	s.Managed = l.Managed()
	return s
}

// snapshot makes the Snapshot of summed counts: the ledger's (current from
// the ledger's level) or a scope's (current the net change, peak above base).
func (t *counts) snapshot(name string, l *Ledger, base, peak [NumKinds]int64, scope bool) Snapshot {
	s := Snapshot{Name: name, Taken: time.Now()}
	for k := range t.kinds {
		tk, lv := &t.kinds[k], &l.levels[k]
		cur := lv.current.Load()
		if scope {
			cur = tk.allocated - tk.freed
		}
		s.Kinds[k] = KindStats{
			Current:   cur,
			Peak:      peak[k] - base[k],
			Allocs:    tk.allocs,
			Frees:     tk.frees,
			Allocated: tk.allocated,
			Freed:     tk.freed,
			Failed:    tk.failed,
			Cached:    lv.cached.Load(),
			Limit:     lv.limit.Load(),
			Base:      base[k],
		}
	}
	for d := range t.copies {
		for p := range t.copies[d] {
			s.Copies[d][p] = t.copies[d][p].stats()
		}
	}
	s.Memsets = t.memsets.stats()
	return s
}

func (c copyCounts) stats() CopyStats {
	return CopyStats{Count: c.count, Bytes: c.bytes, Seconds: time.Duration(c.nanos).Seconds()}
}

// Diff returns what happened between snapshots a and b (b minus a): counts,
// bytes and times subtract; Limit, Base and Pools are b's. Peak cannot be
// subtracted and is b's peak: use a Scope for the peak of a block of code.
func Diff(a, b Snapshot) Snapshot {
	d := Snapshot{Name: b.Name, Taken: b.Taken}
	for k := range d.Kinds {
		x, y := a.Kinds[k], b.Kinds[k]
		d.Kinds[k] = KindStats{
			Current:   y.Current - x.Current,
			Peak:      y.Peak,
			Allocs:    y.Allocs - x.Allocs,
			Frees:     y.Frees - x.Frees,
			Allocated: y.Allocated - x.Allocated,
			Freed:     y.Freed - x.Freed,
			Failed:    y.Failed - x.Failed,
			Limit:     y.Limit,
			Base:      y.Base,
		}
	}
	for dir := range d.Copies {
		for p := range d.Copies[dir] {
			d.Copies[dir][p] = subCopy(b.Copies[dir][p], a.Copies[dir][p])
		}
	}
	d.Memsets = subCopy(b.Memsets, a.Memsets)
	d.Kernels = diffKernels(a.Kernels, b.Kernels)
	d.Pools = b.Pools
	d.Managed = ManagedStats{Faults: b.Managed.Faults - a.Managed.Faults, Duplicates: b.Managed.Duplicates - a.Managed.Duplicates,
		Evictions: b.Managed.Evictions - a.Managed.Evictions,
		Uncounted: b.Managed.Uncounted}
	return d
}

func subCopy(y, x CopyStats) CopyStats {
	return CopyStats{Count: y.Count - x.Count, Bytes: y.Bytes - x.Bytes, Seconds: y.Seconds - x.Seconds}
}

// CopyTotal sums the copies in direction dir over all paths.
func (s Snapshot) CopyTotal(dir Direction) CopyStats {
	var t CopyStats
	if dir >= NumDirections {
		return t
	}
	for _, c := range s.Copies[dir] {
		t.Count += c.Count
		t.Bytes += c.Bytes
		t.Seconds += c.Seconds
	}
	return t
}

// Copied sums every copy in every direction and path.
func (s Snapshot) Copied() CopyStats {
	var t CopyStats
	for d := Direction(0); d < NumDirections; d++ {
		c := s.CopyTotal(d)
		t.Count += c.Count
		t.Bytes += c.Bytes
		t.Seconds += c.Seconds
	}
	return t
}

// Allocations sums successful allocations over all memory kinds.
func (s Snapshot) Allocations() int64 {
	var n int64
	for _, k := range s.Kinds {
		n += k.Allocs
	}
	return n
}

// snapshotJSON is the JSON form: maps keyed by names, copies only where
// something was copied, and a total per direction.
type snapshotJSON struct {
	Name       string                          `json:"name"`
	Taken      time.Time                       `json:"taken"`
	Memory     map[string]KindStats            `json:"memory"`
	Copies     map[string]map[string]CopyStats `json:"copies"`
	CopyTotals map[string]CopyStats            `json:"copy_totals"`
	Memsets    CopyStats                       `json:"memsets"`
	Kernels    []KernelStats                   `json:"kernels,omitempty"`
	Pools      []PoolStats                     `json:"pools,omitempty"`
	Managed    *ManagedStats                   `json:"managed,omitempty"`
}

// MarshalJSON writes the snapshot with kinds, directions and paths by name:
// {"memory": {"device": {...}}, "copies": {"HtoD": {"direct": {...}}}, ...}.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	j := snapshotJSON{
		Name: s.Name, Taken: s.Taken, Memsets: s.Memsets, Kernels: s.Kernels, Pools: s.Pools,
		Memory:     make(map[string]KindStats, NumKinds),
		Copies:     make(map[string]map[string]CopyStats),
		CopyTotals: make(map[string]CopyStats, NumDirections),
	}
	for k := Kind(0); k < NumKinds; k++ {
		j.Memory[k.String()] = s.Kinds[k]
	}
	if s.Managed != (ManagedStats{}) {
		j.Managed = &s.Managed
	}
	for d := Direction(0); d < NumDirections; d++ {
		j.CopyTotals[d.String()] = s.CopyTotal(d)
		for p := Path(0); p < NumPaths; p++ {
			if c := s.Copies[d][p]; c.Count != 0 {
				if j.Copies[d.String()] == nil {
					j.Copies[d.String()] = make(map[string]CopyStats)
				}
				j.Copies[d.String()][p.String()] = c
			}
		}
	}
	return json.Marshal(j)
}

// JSON returns the ledger's current snapshot as indented JSON.
func (l *Ledger) JSON() ([]byte, error) {
	if l == nil {
		return nil, fmt.Errorf("accounting: json: %w", ErrNil)
	}
	return json.MarshalIndent(l.Snapshot(), "", "  ")
}
