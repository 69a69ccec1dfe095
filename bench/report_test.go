package bench_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/transfer"
)

// The table leaves out a column that is "-" in every row and names it,
// with why, in one line under the table; a column with one figure stays.
// Every row has a cell for each column shown.
func TestTableHidesColumnsEmptyInEveryRow(t *testing.T) {
	ratio := func() *float64 { v := 0.5 + rand.Float64(); return &v }
	size := int64(rand.IntN(1<<20) + 1<<20) // above the latency column's sizes
	row := func(path, dir string) bench.Result {
		g := 1 + 10*rand.Float64()
		return bench.Result{Path: path, Direction: dir, Size: size, Repeats: 3, GBps: g, MinGBps: g / 2, MaxGBps: g * 1.1,
			Ledger: &bench.Counts{Requested: 3 * size, Bytes: 3 * size, Seconds: 1e-3, OK: true}}
	}
	for _, tc := range []struct {
		name   string
		rows   func() []bench.Result
		hidden []string
		shown  []string
	}{
		{"no ratios at all", func() []bench.Result { return []bench.Result{row("direct", "HtoD"), row("direct", "DtoH")} },
			[]string{"events GB/s", "µs", "ceiling", "vs pinned", "vs copy()", "vs PCIe", "vs memcpy", "vs 1-way", "planner"},
			[]string{"path", "dir", "size", "reps", "GB/s", "min", "max", "ledger GB/s", "ledger"}},
		{"one row with PCIe and events", func() []bench.Result {
			a, b := row("pinned", "HtoD"), row("pinned", "DtoH")
			b.VsPCIe, b.EventGBps, b.VsPinned = ratio(), 3, ratio()
			return []bench.Result{a, b}
		}, []string{"µs", "ceiling", "vs copy()", "vs memcpy", "vs 1-way", "planner"},
			[]string{"vs PCIe", "events GB/s", "vs pinned"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &bench.Report{Device: "sim:0", Results: tc.rows()}
			table := r.Table()
			lines := strings.Split(table, "\n")
			hi := -1
			for i, l := range lines {
				if strings.Contains(l, " path ") || strings.HasPrefix(strings.TrimSpace(l), "path ") {
					hi = i
					break
				}
			}
			require.GreaterOrEqual(t, hi, 0, "a header in %s", table)
			header := lines[hi]
			for _, c := range tc.hidden {
				assert.NotContains(t, header, " "+c, "%s is - in every row", c)
			}
			for _, c := range tc.shown {
				assert.Contains(t, header, c)
			}
			// the cells of a row: split at runs of two or more spaces
			cells := func(l string) int {
				return len(strings.FieldsFunc(strings.ReplaceAll(strings.TrimSpace(l), "  ", "\x00"), func(r rune) bool { return r == 0 }))
			}
			all := []string{"path", "dir", "size", "reps", "GB/s", "min", "max", "events GB/s", "µs", "ceiling", "vs pinned", "vs copy()",
				"vs PCIe", "vs memcpy", "vs 1-way", "ledger GB/s", "ledger", "planner"}
			var want []string
			for _, c := range all {
				if !slices.Contains(tc.hidden, c) {
					want = append(want, c)
				}
			}
			got := strings.FieldsFunc(strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(header), "  ", "\x00"), "ledger planner", "ledger\x00planner"),
				func(r rune) bool { return r == 0 })
			for i := range got {
				got[i] = strings.TrimSpace(got[i])
			}
			assert.Equal(t, want, got, "the header's cells, each apart")
			for _, l := range lines[hi+1 : hi+1+len(r.Results)] {
				assert.Equal(t, cells(header), cells(l), "a cell per column: %q under %q", l, header)
			}
			note := lines[hi+1+len(r.Results)]
			require.True(t, strings.HasPrefix(note, `not shown, "-" in every row: `), "the line under the table: %q", note)
			for _, l := range lines[hi+2+len(r.Results):] { // wrapped at 100 characters: its later lines indented
				if !strings.HasPrefix(l, "  ") {
					break
				}
				note += " " + strings.TrimSpace(l)
			}
			for _, c := range tc.hidden {
				assert.Contains(t, note, c+" (")
			}
			assert.Equal(t, 1, strings.Count(table, "not shown"), "one note")
		})
	}
	assert.NotContains(t, (&bench.Report{Device: "sim:0"}).Table(), "not shown", "no rows: nothing to hide")
}

// A planner's pick more than SlowerNote slower than the best path measured
// gets a note, whole sentences, saying why the run still passes, with the
// pick's and the best's spread where the report has their rows; picks
// within it get none.
func TestTableExplainsASlowerPick(t *testing.T) {
	slower := bench.SlowerNote + 0.5*(1-rand.Float64()) // in (SlowerNote, SlowerNote+0.5]: a note is for more than SlowerNote
	pickMin, bestMax := 0.5+rand.Float64(), 2+rand.Float64()
	for _, tc := range []struct {
		name   string
		device string
		slower float64
		rows   bool
		note   bool
	}{
		{"the best", "sim:0", 0, true, false},
		{"within the noise", "sim:0", bench.SlowerNote / 2, true, false},
		{"at the note's threshold", "sim:0", bench.SlowerNote, true, false},
		{"slower on sim", "sim:0", slower, true, true},
		{"slower on sim, no rows", "sim:0", slower, false, true},
		{"slower on a GPU", "cuda:0", slower, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &bench.Report{Device: tc.device, Profile: "sim's defaults", Plans: []bench.Plan{
				{Size: 4096, Direction: "HtoD", Host: "pageable", Pick: "direct", PickGBps: 1, Best: "direct", BestGBps: 1},
				{Size: 1 << 20, Direction: "HtoD", Host: "pinned", Pick: "pinned", PickGBps: 1, Best: "mapped", BestGBps: 1 + tc.slower, Slower: tc.slower},
			}}
			if tc.rows {
				r.Results = []bench.Result{
					{Path: "pinned", Direction: "HtoD", Size: 1 << 20, Repeats: 7, GBps: 1, MinGBps: pickMin, MaxGBps: 1.5},
					{Path: "mapped", Direction: "HtoD", Size: 1 << 20, Repeats: 9, GBps: 1 + tc.slower, MinGBps: 0.75, MaxGBps: bestMax},
				}
			}
			for _, table := range []string{r.Table(), r.NarrowTable()} {
				if !tc.note {
					assert.NotContains(t, table, "is not a failure", "%.2f slower", tc.slower)
					continue
				}
				_, note, found := strings.Cut(table, "  a pick up to ")
				require.True(t, found, "a note under the planner's table:\n%s", table)
				for _, l := range strings.Split(strings.TrimSuffix(note, "\n"), "\n")[1:] {
					assert.True(t, strings.HasPrefix(l, "    "), "the note's later lines are indented: %q", l)
				}
				note = "a pick up to " + strings.Join(strings.Fields(note), " ")
				assert.True(t, strings.HasPrefix(note, fmt.Sprintf("a pick up to %.0f%% slower than the best measured is not a failure: "+
					"the planner predicts each path's time from its profile (sim's defaults), not from this run's timings", tc.slower*100)), note)
				assert.True(t, strings.HasSuffix(note, "."), "the note ends its sentence: %q", note)
				if tc.rows {
					assert.Contains(t, note, fmt.Sprintf("(pinned HtoD 1.00 MiB: the pick, pinned, ran at %.2f–1.50 GB/s over 7 repeats, mapped at 0.75–%.2f over 9)", pickMin, bestMax))
				} else {
					assert.NotContains(t, note, "repeats,")
				}
				if tc.device == "sim:0" {
					assert.True(t, strings.HasSuffix(note, "`cuarray bench -calibrate -profile FILE` measures this machine's costs into a profile "+
						"the planner then uses with -profile FILE or $CUARRAY_PROFILE=FILE."), note)
				} else {
					assert.True(t, strings.HasSuffix(note, "`cuarray bench -calibrate` measures this device's costs into the profile the planner uses from then on."), note)
				}
			}
		})
	}
}

// NarrowTable is what `cuarray bench` prints by default: make run's
// table, with every column filled and the widest planner text, fits 120
// columns and its text lines 100; it leaves out the wide columns and names
// them in one line; Table has them all.
func TestNarrowTableFits(t *testing.T) {
	ratio := func() *float64 { v := 0.05 + 2*rand.Float64(); return &v }
	r := &bench.Report{Device: "sim:0", Model: "cuarray simulated device (host memory)", Profile: "cuarray simulated device (host memory) profile (defaults: sim, which has no DMA engine)",
		Tolerance: 0.05, Ring: transfer.RingShape{Chunks: 4, ChunkBytes: 512 << 10, Streams: 2}}
	for i := range 6 {
		r.HostCopy = append(r.HostCopy, bench.MemoryCopy{Bytes: 4096 << (3 * i), GBps: 10 + 100*rand.Float64()})
	}
	for _, size := range []int64{4 << 10, 1 << 20, 16 << 20} {
		for _, path := range []string{"go-copy", "direct", "pinned", "staged", "mapped", "d2d"} {
			for _, dir := range []string{"HtoD", "DtoH"} {
				g := 0.1 + 100*rand.Float64()
				lat := 1000 * rand.Float64()
				q := bench.Result{Path: path, Direction: dir, Size: size, Repeats: 50, GBps: g, MinGBps: g / 3, MaxGBps: g * 1.2,
					EventGBps: g * 1.1, LatencyMicros: &lat, Ceiling: &bench.Ceiling{GBps: 454.98}, VsPinned: ratio(), VsCopy: ratio(), VsMemcpy: ratio(),
					Ledger:  &bench.Counts{Requested: 50 * size, Bytes: 50 * size, Seconds: 1e-3, OK: true},
					Planner: "pick, 100% slower; overall pick"}
				r.Results = append(r.Results, q)
			}
		}
	}
	r.Plans = []bench.Plan{{Size: 16 << 20, Direction: "DtoH", Host: "mapped pinned", Pick: "pinned", PickGBps: 12.63, Best: "mapped", BestGBps: 20.26, Slower: 0.6}}
	narrow, wide := r.NarrowTable(), r.Table()
	inTable := false
	for _, l := range strings.Split(narrow, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "path ") {
			inTable = true
			for _, c := range []string{"events GB/s", "µs", "vs copy()", "vs memcpy", "ledger GB/s"} {
				assert.NotContains(t, l, c, "a wide column")
			}
			for _, c := range []string{"path", "dir", "size", "reps", "GB/s", "min", "max", "ceiling", "vs pinned", "ledger", "planner"} {
				assert.Contains(t, l, c)
			}
		}
		if strings.HasPrefix(l, "more columns") || strings.HasPrefix(l, "not shown") {
			inTable = false
		}
		width := 100
		if inTable {
			width = 120
		}
		assert.LessOrEqual(t, utf8.RuneCountInString(l), width, "%q", l)
	}
	assert.Contains(t, narrow, "\nmore columns with -wide (and in -json): events GB/s, µs, vs copy(), vs memcpy, ledger GB/s\n")
	assert.NotContains(t, wide, "more columns")
	assert.Contains(t, wide, "events GB/s")
	assert.Contains(t, wide, "vs memcpy")
	assert.Contains(t, narrow, "is not a failure")
}
