package bench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/transfer"
)

// Table returns the report as an aligned text table, one row per
// measurement, with every figure: its ratios, its ceiling and the ledger
// column, "ok" when the ledger counted exactly the bytes requested and no
// figure is above its ceiling (`cuarray bench -wide`). The figures that
// cannot be true follow the table. NarrowTable leaves out the columns a
// first look does without.
func (r *Report) Table() string { return r.table(true) }

// NarrowTable is Table without the columns marked wide in tableColumns
// (events GB/s, µs, vs copy(), vs memcpy, ledger GB/s): one line under it
// names those that have figures, which Table and the JSON report give. A
// run of make run's fits 120 columns. `cuarray bench` prints it by default.
func (r *Report) NarrowTable() string { return r.table(false) }

// proseWidth is where the report's lines of text (not the table's rows)
// are wrapped.
const proseWidth = 100

func (r *Report) table(wide bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cuarray bench on %s (%s) %s\n", r.Device, r.Model, r.Date.Format("2006-01-02 15:04 MST"))
	if r.PCIeGBps > 0 {
		fmt.Fprintf(&b, "PCIe limit taken as %s GB/s per direction\n", gbpsText(r.PCIeGBps))
	}
	if len(r.HostCopy) > 0 {
		rates := make([]string, len(r.HostCopy))
		for i, m := range r.HostCopy {
			rates[i] = fmt.Sprintf("%.2f at %s", m.GBps, accounting.FormatBytes(m.Bytes))
			if m.OutOfCache {
				rates[i] += " (out of cache)"
			}
		}
		prose(&b, fmt.Sprintf("host memory copy, GB/s at each size: %s", strings.Join(rates, ", ")))
	} else if r.HostCopyGBps > 0 {
		fmt.Fprintf(&b, "host memory copy peak %.2f GB/s\n", r.HostCopyGBps)
	}
	ceilings := []Ceiling{r.Ceilings.HostLink, r.Ceilings.DtoD}
	if h, d := r.Ceilings.HostLink, r.Ceilings.DtoD; len(h.BySize) > 0 && slices.Equal(h.BySize, d.BySize) && h.Source == d.Source {
		h.Limit += " and " + d.Limit // sim's one curve bounds both: said once
		ceilings = []Ceiling{h}
	}
	for _, c := range ceilings {
		switch {
		case len(c.BySize) > 0:
			rates := make([]string, len(c.BySize))
			for i, s := range c.BySize {
				rates[i] = fmt.Sprintf("%.2f from %s", s.GBps, accounting.FormatBytes(s.FromBytes))
			}
			prose(&b, fmt.Sprintf("ceiling: %s, GB/s by copy size: %s (%s)", c.Limit, strings.Join(rates, ", "), c.Source))
		case c.GBps > 0:
			fmt.Fprintf(&b, "ceiling: %s %.2f GB/s (%s)\n", c.Limit, c.GBps, c.Source)
		}
	}
	if len(r.HostMemcpy) > 0 {
		var rates []string
		for _, h := range r.HostMemcpy {
			rates = append(rates, fmt.Sprintf("%.2f on %d", h.GBps, h.Threads))
		}
		prose(&b, fmt.Sprintf("host memcpy pageable→pinned, %s: %s GB/s on goroutines; ceiling of the staged path %.2f GB/s (%s)",
			accounting.FormatBytes(r.MemcpyBytes), strings.Join(rates, ", "), r.MemcpyCeiling.GBps, goroutines(r.MemcpyCeiling.Threads)))
	}
	if r.Profile != "" {
		prose(&b, fmt.Sprintf("planner: %s; staging ring %d × %s on %d streams", r.Profile, r.Ring.Chunks, accounting.FormatBytes(r.Ring.ChunkBytes), r.Ring.Streams))
	}
	if r.ProfileNotice != "" {
		prose(&b, "notice: "+r.ProfileNotice)
	}
	if r.Tolerance > 0 {
		prose(&b, fmt.Sprintf("a figure (median, fastest repeat, the ledger's) more than %.0f%% above its ceiling fails the run", r.Tolerance*100))
	}
	var impossible []string
	cells := make([][]string, len(r.Results))
	for i, q := range r.Results {
		cells[i] = []string{q.Path, q.Direction, accounting.FormatBytes(q.Size), fmt.Sprint(q.Repeats),
			fmt.Sprintf("%.2f", q.GBps), fmt.Sprintf("%.2f", q.MinGBps), fmt.Sprintf("%.2f", q.MaxGBps), eventText(q.EventGBps),
			latencyText(q.LatencyMicros), ceilingText(q.Ceiling), ratioText(q.VsPinned), ratioText(q.VsCopy), ratioText(q.VsPCIe),
			ratioText(q.VsMemcpy), ratioText(q.VsOneWay), ledgerRate(q.Ledger), ledgerText(q), q.Planner}
		if q.Impossible != "" {
			impossible = append(impossible, q.Impossible)
		}
	}
	cols, hidden, more := shownColumns(cells, wide)
	var rows strings.Builder
	w := tabwriter.NewWriter(&rows, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(row []string) {
		var l strings.Builder
		for _, c := range cols {
			if tableColumns[c].name == "planner" { // the last, left-aligned after a space: text after the last cell
				l.WriteString(" " + row[c])
			} else {
				l.WriteString(row[c] + "\t") // every other cell ends in a tab, so that it is aligned
			}
		}
		fmt.Fprintln(w, l.String())
	}
	header := make([]string, len(tableColumns))
	for c, col := range tableColumns {
		header[c] = col.name
	}
	line(header)
	for _, row := range cells {
		line(row)
	}
	w.Flush()
	for _, line := range strings.SplitAfter(rows.String(), "\n") {
		b.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	if len(hidden) > 0 {
		prose(&b, fmt.Sprintf("not shown, \"-\" in every row: %s", strings.Join(hidden, "; ")))
	}
	if len(more) > 0 {
		prose(&b, fmt.Sprintf("more columns with -wide (and in -json): %s", strings.Join(more, ", ")))
	}
	for _, u := range r.Unsupported {
		prose(&b, u)
	}
	for _, c := range cols {
		if tableColumns[c].name == "ledger GB/s" {
			prose(&b, ledgerRateNote)
		}
	}
	if len(r.Plans) > 0 {
		fmt.Fprintf(&b, "planner's pick against the best path measured:\n")
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "  host\tdir\tsize\tpick\tGB/s\tbest\tGB/s\tslower")
		for _, pl := range r.Plans {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%.2f\t%s\t%.2f\t%.0f%%\n", pl.Host, pl.Direction, accounting.FormatBytes(pl.Size), pl.Pick, pl.PickGBps, pl.Best, pl.BestGBps, pl.Slower*100)
		}
		w.Flush()
		if slowest := slices.MaxFunc(r.Plans, func(a, b Plan) int { return cmp.Compare(a.Slower, b.Slower) }); slowest.Slower > SlowerNote {
			prose(&b, "  "+r.slowerNote(slowest))
		}
	}
	if len(impossible) > 0 {
		fmt.Fprintf(&b, "figures that cannot be true:\n")
		for _, s := range impossible {
			fmt.Fprintf(&b, "  %s\n", s) // whole, as the run's error gives each
		}
	}
	return b.String()
}

// tableColumns are the columns of Report.Table, in order, each with why
// it would be "-" in every row (then it is not shown), and whether only
// the wide table (Table, not NarrowTable) shows it.
var tableColumns = []struct {
	name, whyEmpty string
	wide           bool
}{
	{"path", "", false}, {"dir", "", false}, {"size", "", false}, {"reps", "", false}, {"GB/s", "", false},
	{"min", "", false}, {"max", "", false},
	{"events GB/s", "no path timed between events on its stream", true},
	{"µs", "no copy of at most " + accounting.FormatBytes(LatencyMaxBytes), true},
	{"ceiling", "no path with a ceiling", false},
	{"vs pinned", "the pinned path not measured", false},
	{"vs copy()", "no Go copy() to compare with", true},
	{"vs PCIe", "the host link's bandwidth is not known: -pcie gives it", false},
	{"vs memcpy", "the staged path not measured", true},
	{"vs 1-way", "no -bidir", false},
	{"ledger GB/s", "no copy the ledger timed", true},
	{"ledger", "no ledger counts", false},
	{"planner", "no planner's pick", false},
}

// shownColumns returns the indices of the columns of cells (rows of
// tableColumns) that are not "-" or empty in every row, and for the
// others a note: the column's name and why it is empty. With no rows
// every column is shown. Unless wide, the wide columns are left out
// too: more names those that have figures.
func shownColumns(cells [][]string, wide bool) (shown []int, hidden, more []string) {
	for c, col := range tableColumns {
		empty := len(cells) > 0 && col.whyEmpty != ""
		for _, row := range cells {
			if v := row[c]; v != "-" && v != "" {
				empty = false
				break
			}
		}
		switch {
		case col.wide && !wide:
			if !empty {
				more = append(more, col.name)
			}
		case empty:
			hidden = append(hidden, fmt.Sprintf("%s (%s)", col.name, col.whyEmpty))
		default:
			shown = append(shown, c)
		}
	}
	return shown, hidden, more
}

// slowerNote says why the planner's pick pl, the one slowest against the
// best path measured, does not fail the run: the planner predicts from
// its profile, and one run's figures of a few repeats spread as widely
// as the paths differ (the pick's and the best's spread, where the report
// has them).
func (r *Report) slowerNote(pl Plan) string {
	note := fmt.Sprintf("a pick up to %.0f%% slower than the best measured is not a failure: the planner predicts each path's time "+
		"from its profile (%s), not from this run's timings, and one run's median of a few repeats is not exact", pl.Slower*100, r.Profile)
	find := func(path string) *Result {
		for i := range r.Results {
			if q := &r.Results[i]; q.Path == path && q.Direction == pl.Direction && q.Size == pl.Size {
				return q
			}
		}
		return nil
	}
	if pick, best := find(pl.Pick), find(pl.Best); pick != nil && best != nil {
		note += fmt.Sprintf(" (%s %s %s: the pick, %s, ran at %.2f–%.2f GB/s over %d repeats, %s at %.2f–%.2f over %d)",
			pl.Host, pl.Direction, accounting.FormatBytes(pl.Size), pick.Path, pick.MinGBps, pick.MaxGBps, pick.Repeats,
			best.Path, best.MinGBps, best.MaxGBps, best.Repeats)
	}
	if strings.HasPrefix(r.Device, "sim") {
		// sim plans with its defaults unless a profile is named (transfer.ProfileFor)
		return note + ". On sim every path is a copy in host memory, and `cuarray bench -calibrate -profile FILE` measures " +
			"this machine's costs into a profile the planner then uses with -profile FILE or $" + transfer.ProfileEnv + "=FILE."
	}
	return note + ". `cuarray bench -calibrate` measures this device's costs into the profile the planner uses from then on."
}

// prose writes s to b as lines of at most proseWidth characters where
// its words allow, the later ones indented by two spaces more than the
// first.
func prose(b *strings.Builder, s string) {
	indent := s[:len(s)-len(strings.TrimLeft(s, " "))] + "  "
	line := 0
	for i, word := range strings.Fields(s) {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
			b.WriteString(indent[:len(indent)-2] + word)
			line = len(indent) - 2 + n
		case line+1+n > proseWidth:
			b.WriteString("\n" + indent + word)
			line = len(indent) + n
		default:
			b.WriteString(" " + word)
			line += 1 + n
		}
	}
	b.WriteByte('\n')
}

// SlowerNote is how much slower than the best path measured a planner's
// pick may be before the table says why that is not a failure.
const SlowerNote = 0.10

// ledgerText is the ledger column: "ok", or what is wrong; then a managed
// path's page faults, and read-only copies ("dup") where there were some.
func ledgerText(q Result) string {
	if q.Ledger == nil {
		return "-"
	}
	var pages string // a managed path's page events
	if l := q.Ledger; l.Faults > 0 || l.Duplicates > 0 {
		pages = fmt.Sprintf(" %d faults", l.Faults)
		if l.Duplicates > 0 {
			pages += fmt.Sprintf(" %d dup", l.Duplicates)
		}
	}
	if q.LedgerOK() {
		return "ok" + pages
	}
	var why []string
	if !q.Ledger.OK {
		why = append(why, fmt.Sprintf("MISMATCH %d/%d other %d", q.Ledger.Bytes, q.Ledger.Requested, q.Ledger.Other))
	}
	if q.Impossible != "" {
		why = append(why, "IMPOSSIBLE")
	}
	return strings.Join(why, " ") + pages
}

// ledgerRateNote, under a table with the ledger GB/s column, says why
// that column can differ from GB/s and events GB/s by more than noise.
const ledgerRateNote = "ledger GB/s is the bytes over the time the ledger recorded for all the timed repeats, a mean " +
	"that one slow repeat (the min column) pulls down; GB/s and events GB/s are medians"

// ledgerRate is the ledger's figure for the timed copies.
func ledgerRate(c *Counts) string {
	if c == nil || c.Bytes == 0 || c.Untimed {
		return "-"
	}
	if c.Seconds <= 0 {
		return "in 0 s"
	}
	return gbpsText(c.GBps())
}

// eventText is the event-timed median's GB/s, "-" where events did not time the copy.
func eventText(gbps float64) string {
	if gbps <= 0 {
		return "-"
	}
	return gbpsText(gbps)
}

// latencyText is a small copy's time in µs, "-" for a larger one.
func latencyText(us *float64) string {
	if us == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *us)
}

func ceilingText(c *Ceiling) string {
	if c == nil {
		return "-"
	}
	return gbpsText(c.GBps)
}

func ratioText(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}

// CountsOK reports whether every measurement's ledger counts matched its requests.
func (r *Report) CountsOK() bool {
	for _, q := range r.Results {
		if q.Ledger != nil && !q.Ledger.OK {
			return false
		}
	}
	return true
}

// SVG draws bandwidth against size, one line per path, in one panel per
// direction (log-scaled size, linear GB/s).
func (r *Report) SVG() []byte {
	dirs := []string{}
	series := map[string]map[string][][2]float64{} // direction → path → (size, GB/s)
	var maxGBps float64
	minSize, maxSize := math.Inf(1), math.Inf(-1)
	for _, q := range r.Results {
		if series[q.Direction] == nil {
			series[q.Direction] = map[string][][2]float64{}
			dirs = append(dirs, q.Direction)
		}
		series[q.Direction][q.Path] = append(series[q.Direction][q.Path], [2]float64{float64(q.Size), q.GBps})
		maxGBps = max(maxGBps, q.GBps)
		minSize, maxSize = min(minSize, float64(q.Size)), max(maxSize, float64(q.Size))
	}
	const pw, ph, margin = 420.0, 300.0, 50.0
	width := margin + float64(len(dirs))*(pw+margin)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, ph+2*margin+40)
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14">cuarray bench: %s (%s)</text>`+"\n", margin, xmlEscape(r.Device), xmlEscape(r.Model))
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}
	xOf := func(size float64, x0 float64) float64 {
		if maxSize <= minSize {
			return x0 + pw/2
		}
		return x0 + (math.Log2(size)-math.Log2(minSize))/(math.Log2(maxSize)-math.Log2(minSize))*pw
	}
	yOf := func(g float64) float64 { return margin + ph - g/max(maxGBps, 1e-9)*ph }
	for i, dir := range dirs {
		x0 := margin + float64(i)*(pw+margin)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", x0, margin, pw, ph)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", x0+4, margin-6, xmlEscape(dir))
		for k := 0; k <= 4; k++ {
			g := maxGBps * float64(k) / 4
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.1f</text>`+"\n", x0-4, yOf(g)+4, g)
		}
		for _, size := range sizesOf(r) {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", xOf(size, x0), margin+ph+14, accounting.FormatBytes(int64(size)))
		}
		paths := make([]string, 0, len(series[dir]))
		for p := range series[dir] {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for k, p := range paths {
			pts := series[dir][p]
			sort.Slice(pts, func(a, b int) bool { return pts[a][0] < pts[b][0] })
			var coords []string
			for _, pt := range pts {
				coords = append(coords, fmt.Sprintf("%.1f,%.1f", xOf(pt[0], x0), yOf(pt[1])))
			}
			color := colors[k%len(colors)]
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(coords, " "))
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", x0+8, margin+14+float64(k)*13, color, xmlEscape(p))
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">GB/s (median) against copy size</text>`+"\n", margin, ph+2*margin+20)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func sizesOf(r *Report) []float64 {
	seen := map[int64]bool{}
	var out []float64
	for _, q := range r.Results {
		if !seen[q.Size] {
			seen[q.Size] = true
			out = append(out, float64(q.Size))
		}
	}
	return out
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// goroutines writes n goroutines: "1 goroutine", "2 goroutines".
func goroutines(n int) string {
	if n == 1 {
		return "1 goroutine"
	}
	return fmt.Sprintf("%d goroutines", n)
}
