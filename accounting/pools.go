package accounting

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// PoolStats are one stream-ordered memory pool's figures as its device
// reports them (cuMemPoolGetAttribute): the device memory the pool holds
// (Reserved) and the part of it handed out (Used), each now and at its
// highest, and the release threshold. They sit beside the ledger's own
// count of the bytes handed out, kind StreamOrdered: Used counts what the
// pool gave (its blocks may be larger than asked), StreamOrdered what was
// asked for, rounded up to 256 bytes.
type PoolStats struct {
	Name             string `json:"name"`
	Reserved         int64  `json:"reserved"`
	ReservedHigh     int64  `json:"reserved_high"`
	Used             int64  `json:"used"`
	UsedHigh         int64  `json:"used_high"`
	ReleaseThreshold int64  `json:"release_threshold"`
}

// PoolsFunc returns the figures of a device's stream-ordered pools.
type PoolsFunc func() []PoolStats

// SetPools tells the ledger how to ask its device for its stream-ordered
// pools' figures, which every Snapshot then carries (sorted by name). f
// must not record anything in this ledger. A nil f forgets the function.
func (l *Ledger) SetPools(f PoolsFunc) {
	switch {
	case l == nil:
	case f == nil:
		l.pools.Store(nil)
	default:
		l.pools.Store(&f)
	}
}

// poolStats asks the device for its pools' figures, nil without SetPools.
func (l *Ledger) poolStats() []PoolStats {
	f := l.pools.Load()
	if f == nil {
		return nil
	}
	ps := slices.Clone((*f)())
	slices.SortFunc(ps, func(a, b PoolStats) int { return strings.Compare(a.Name, b.Name) })
	return ps
}

// writePools writes the pools' table of a report.
func writePools(b io.Writer, pools []PoolStats) {
	if len(pools) == 0 {
		return
	}
	fmt.Fprintln(b)
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "stream-ordered pool\treserved\treserved high\tused\tused high\trelease threshold\t")
	for _, p := range pools {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Name, FormatBytes(p.Reserved), FormatBytes(p.ReservedHigh),
			FormatBytes(p.Used), FormatBytes(p.UsedHigh), FormatBytes(p.ReleaseThreshold))
	}
	w.Flush()
}
