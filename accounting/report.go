package accounting

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Report returns the ledger's counters as an aligned text table.
func (l *Ledger) Report() string { return l.Snapshot().Report() }

// Report returns the snapshot as aligned text tables: one row per memory
// kind that saw any activity or has a limit, one per copy direction and
// path used (with memsets), and, when kernels were launched, one per
// kernel with its launches and the bytes it read and wrote ("-" where
// the backend cannot know them: a GPU). Memory is counted as allocated: a device hands
// out whole granules (256 bytes on sim and CUDA), which a note under the
// table says. A copy's time is the total the ledger recorded for it, in
// µs, ms or s as its size asks.
func (s Snapshot) Report() string {
	var b strings.Builder
	title := s.Name
	if title == "" {
		title = "ledger"
	}
	fmt.Fprintf(&b, "ledger %s\n", title)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "memory\tcurrent\tcached\tpeak\tallocs\tfrees\tallocated\tfailed\tlimit\t")
	rows := 0
	for k := Kind(0); k < NumKinds; k++ {
		st := s.Kinds[k]
		if st.Allocs == 0 && st.Frees == 0 && st.Failed == 0 && st.Current == 0 && st.Limit == 0 {
			continue
		}
		limit := "none"
		if st.Limit > 0 {
			limit = FormatBytes(st.Limit)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\t\n", k, FormatBytes(st.Current), FormatBytes(st.Cached), FormatBytes(st.Peak),
			st.Allocs, st.Frees, FormatBytes(st.Allocated), st.Failed, limit)
		rows++
	}
	w.Flush()
	if rows == 0 {
		fmt.Fprintln(&b, "  (no allocations)")
	} else if d := s.Kinds[Device]; d.Allocs > 0 || d.Current > 0 {
		fmt.Fprintln(&b, "  (bytes as the device allocated them: whole 256-byte granules on sim and CUDA, so a 48-byte array takes 256 B)")
	}
	fmt.Fprintln(&b)
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "copy\tpath\tcount\tbytes\ttime\tGB/s\t")
	rows = 0
	for d := Direction(0); d < NumDirections; d++ {
		for p := Path(0); p < NumPaths; p++ {
			if c := s.Copies[d][p]; c.Count > 0 {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t\n", d, p, c.Count, FormatBytes(c.Bytes), duration(c.Seconds), rate(c))
				rows++
			}
		}
	}
	if m := s.Memsets; m.Count > 0 {
		fmt.Fprintf(w, "memset\t-\t%d\t%s\t%s\t%s\t\n", m.Count, FormatBytes(m.Bytes), duration(m.Seconds), rate(m))
		rows++
	}
	w.Flush()
	if rows == 0 {
		fmt.Fprintln(&b, "  (no copies)")
	}
	if len(s.Kernels) > 0 {
		fmt.Fprintln(&b)
		w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "kernel\tlaunches\tread\twritten\t")
		for _, k := range s.Kernels {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t\n", k.Name, k.Launches, launchBytes(k, k.Read), launchBytes(k, k.Written))
		}
		w.Flush()
	}
	if m := s.Managed; m != (ManagedStats{}) {
		fmt.Fprintf(&b, "\nmanaged memory: %d page faults, %d read duplicates, %d evictions\n", m.Faults, m.Duplicates, m.Evictions)
		if m.Uncounted != "" {
			fmt.Fprintf(&b, "managed memory migrations not counted: %s\n", m.Uncounted)
		}
	}
	writePools(&b, s.Pools)
	return b.String()
}

// launchBytes formats a kernel's bytes read or written: "-" when no
// launch was measured (a GPU), and "(of N)" naming the measured launches
// when only some were.
func launchBytes(k KernelStats, n int64) string {
	switch k.Measured {
	case 0:
		return "-"
	case k.Launches:
		return FormatBytes(n)
	}
	return fmt.Sprintf("%s (of %d)", FormatBytes(n), k.Measured)
}

// duration formats a recorded time in µs below a millisecond, ms below a
// second, else s; "-" when none was recorded.
func duration(sec float64) string {
	switch {
	case !(sec > 0):
		return "-"
	case sec < 1e-3:
		return fmt.Sprintf("%.1f µs", sec*1e6)
	case sec < 1:
		return fmt.Sprintf("%.3f ms", sec*1e3)
	default:
		return fmt.Sprintf("%.3f s", sec)
	}
}

// rate formats bytes per second in GB/s (10^9), or "-" when no time or
// no bytes were recorded (the registered path's registrations move none).
func rate(c CopyStats) string {
	if c.Seconds <= 0 || c.Bytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(c.Bytes)/c.Seconds/1e9)
}
