package bench

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/transfer"
)

// ProfileText returns a profile as text: where it comes from, a line per
// path and direction (latency, bandwidth, how well the line fits), the
// host's memcpy rates and the staging ring.
func ProfileText(p *transfer.Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "transfer profile of %s (%s, %s backend), %s\n", p.Model, p.Device, p.Backend, p.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "source: %s\n", p.Source)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "path\tdir\tlatency\tGB/s\tfit within")
	for _, c := range p.Costs {
		fit := "-"
		if c.FitError > 0 {
			fit = fmt.Sprintf("%.0f%%", c.FitError*100)
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%.3g\t%s\n", c.Path, c.Direction, time.Duration(c.LatencyUS*1e3).Round(100*time.Nanosecond), c.GBps, fit)
	}
	w.Flush()
	if len(p.HostCopy) > 0 {
		var rates []string
		for _, h := range p.HostCopy {
			rates = append(rates, fmt.Sprintf("%.2f GB/s on %d", h.GBps, h.Threads))
		}
		fmt.Fprintf(&b, "host memcpy pageable→pinned: %s\n", strings.Join(rates, ", "))
	}
	if r := p.Ring; r != nil {
		fmt.Fprintf(&b, "staging ring: %d chunks of %s on %d streams\n", r.Chunks, accounting.FormatBytes(r.ChunkBytes), r.Streams)
	}
	return b.String()
}
