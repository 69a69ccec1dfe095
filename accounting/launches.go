package accounting

import (
	"slices"
	"strings"
	"sync"
)

// KernelStats are the launches of one kernel.
type KernelStats struct {
	Name     string `json:"name"`
	Launches int64  `json:"launches"`
	// Measured counts the launches whose bytes the backend knew (an
	// interpreted kernel on sim or the emulated driver; a GPU cannot say).
	Measured int64 `json:"measured"`
	// Read and Written are the bytes of device memory the measured
	// launches read and wrote.
	Read    int64 `json:"read_bytes"`
	Written int64 `json:"written_bytes"`
}

// kernelTally is launches per kernel name: a ledger's or a scope's.
type kernelTally map[string]*KernelStats

// add counts one launch of name; its bytes when measured.
func (t kernelTally) add(name string, measured bool, read, written int64) {
	k := t[name]
	if k == nil {
		k = &KernelStats{Name: name}
		t[name] = k
	}
	k.Launches++
	if measured {
		k.Measured++
		k.Read += read
		k.Written += written
	}
}

// list returns the tally sorted by name; nil when empty.
func (t kernelTally) list() []KernelStats {
	if len(t) == 0 {
		return nil
	}
	out := make([]KernelStats, 0, len(t))
	for _, k := range t {
		out = append(out, *k)
	}
	sortKernels(out)
	return out
}

// launchCounts are a ledger's launches per kernel name. Its mutex also
// guards the tallies of the ledger's scopes, so that a launch is counted
// in the ledger and in the innermost scope at once, and a scope's launches
// move to its parent when it is popped without losing one.
type launchCounts struct {
	mu  sync.Mutex
	all kernelTally
}

// RecordLaunch counts one launch of the kernel called name, which read
// and wrote the given bytes of device memory; read or written < 0 means
// the backend cannot know them (a GPU): the launch is counted, its bytes
// are not. A launch is counted in the ledger (Snapshot, Report, JSON) and,
// like every event, in the innermost scope open when it was recorded (the
// scope's Pop and Measure); it is logged (OpLaunch) when the event log is
// on. A nil Ledger records nothing.
func (l *Ledger) RecordLaunch(name string, read, written int64) {
	if l == nil {
		return
	}
	measured := read >= 0 && written >= 0
	c := &l.launches
	c.mu.Lock()
	if c.all == nil {
		c.all = make(kernelTally)
	}
	c.all.add(name, measured, read, written)
	if s := l.top.Load(); s != nil {
		if s.launches == nil {
			s.launches = make(kernelTally)
		}
		s.launches.add(name, measured, read, written)
	}
	c.mu.Unlock()
	if lg := l.log.Load(); lg != nil {
		lg.add(Event{Op: OpLaunch, Name: name, Bytes: max(read, -1), Written: max(written, -1)})
	}
}

// kernels returns the ledger's launches so far, sorted by name; nil when none.
func (c *launchCounts) kernels() []KernelStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all.list()
}

// popLaunches returns the launches counted in scope s and adds them to its
// parent's. Pop calls it after making the parent the innermost scope, so
// that a launch recorded meanwhile is counted either in s (and moved here)
// or in the parent, never lost.
func (c *launchCounts) popLaunches(s *Scope) []KernelStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := s.parent; p != nil && len(s.launches) > 0 {
		if p.launches == nil {
			p.launches = make(kernelTally)
		}
		for name, k := range s.launches {
			pk := p.launches[name]
			if pk == nil {
				pk = &KernelStats{Name: name}
				p.launches[name] = pk
			}
			pk.Launches += k.Launches
			pk.Measured += k.Measured
			pk.Read += k.Read
			pk.Written += k.Written
		}
	}
	out := s.launches.list()
	s.launches = nil
	return out
}

func sortKernels(ks []KernelStats) {
	slices.SortFunc(ks, func(a, b KernelStats) int { return strings.Compare(a.Name, b.Name) })
}

// diffKernels is b's launches less a's, per name: a name only in b is kept
// whole, one only in a comes out negative; names whose launches did not
// change are left out. The result is sorted by name, nil when empty.
func diffKernels(a, b []KernelStats) []KernelStats {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	d := make(map[string]KernelStats, len(a)+len(b))
	for _, k := range b {
		x := d[k.Name]
		d[k.Name] = KernelStats{Name: k.Name, Launches: x.Launches + k.Launches, Measured: x.Measured + k.Measured,
			Read: x.Read + k.Read, Written: x.Written + k.Written}
	}
	for _, k := range a {
		x := d[k.Name]
		d[k.Name] = KernelStats{Name: k.Name, Launches: x.Launches - k.Launches, Measured: x.Measured - k.Measured,
			Read: x.Read - k.Read, Written: x.Written - k.Written}
	}
	var out []KernelStats
	for _, k := range d {
		if k.Launches != 0 {
			out = append(out, k)
		}
	}
	sortKernels(out)
	return out
}

// addKernels adds the launches of b to a, per name, and returns a sorted
// by name. It appends to a, never writes to b's array.
func addKernels(a, b []KernelStats) []KernelStats {
	for _, k := range b {
		i := slices.IndexFunc(a, func(x KernelStats) bool { return x.Name == k.Name })
		if i < 0 {
			a = append(a, k)
			continue
		}
		a[i].Launches += k.Launches
		a[i].Measured += k.Measured
		a[i].Read += k.Read
		a[i].Written += k.Written
	}
	sortKernels(a)
	return a
}
