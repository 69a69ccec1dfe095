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

// launchCounts are a ledger's launches per kernel name.
type launchCounts struct {
	mu     sync.Mutex
	byName map[string]*KernelStats
}

// RecordLaunch counts one launch of the kernel called name, which read
// and wrote the given bytes of device memory; read or written < 0 means
// the backend cannot know them (a GPU): the launch is counted, its bytes
// are not. Launches are counted for the ledger as a whole (Snapshot,
// Report, JSON), not per scope, and logged (OpLaunch) when the event log
// is on.
func (l *Ledger) RecordLaunch(name string, read, written int64) {
	if l == nil {
		return
	}
	measured := read >= 0 && written >= 0
	c := &l.launches
	c.mu.Lock()
	if c.byName == nil {
		c.byName = make(map[string]*KernelStats)
	}
	k := c.byName[name]
	if k == nil {
		k = &KernelStats{Name: name}
		c.byName[name] = k
	}
	k.Launches++
	if measured {
		k.Measured++
		k.Read += read
		k.Written += written
	}
	c.mu.Unlock()
	if lg := l.log.Load(); lg != nil {
		if !measured {
			read, written = -1, -1
		}
		lg.add(Event{Op: OpLaunch, Name: name, Bytes: read, Written: written})
	}
}

// kernels returns the launches so far, sorted by name; nil when none.
func (c *launchCounts) kernels() []KernelStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byName) == 0 {
		return nil
	}
	out := make([]KernelStats, 0, len(c.byName))
	for _, k := range c.byName {
		out = append(out, *k)
	}
	sortKernels(out)
	return out
}

func sortKernels(ks []KernelStats) {
	slices.SortFunc(ks, func(a, b KernelStats) int { return strings.Compare(a.Name, b.Name) })
}

// diffKernels is b's launches less a's, per name; names whose launches did
// not change are left out.
func diffKernels(a, b []KernelStats) []KernelStats {
	before := make(map[string]KernelStats, len(a))
	for _, k := range a {
		before[k.Name] = k
	}
	var out []KernelStats
	for _, k := range b {
		x := before[k.Name]
		d := KernelStats{Name: k.Name, Launches: k.Launches - x.Launches, Measured: k.Measured - x.Measured,
			Read: k.Read - x.Read, Written: k.Written - x.Written}
		if d.Launches != 0 {
			out = append(out, d)
		}
	}
	return out
}

// addKernels adds the launches of b to a, per name.
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
