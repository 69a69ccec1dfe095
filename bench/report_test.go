package bench_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/bench"
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
			for _, c := range tc.hidden {
				assert.Contains(t, note, c+" (")
			}
			assert.Equal(t, 1, strings.Count(table, "not shown"), "one line")
		})
	}
	assert.NotContains(t, (&bench.Report{Device: "sim:0"}).Table(), "not shown", "no rows: nothing to hide")
}

// A planner's pick more than SlowerNote slower than the best path measured
// gets one line saying why the run still passes; picks within it get none.
func TestTableExplainsASlowerPick(t *testing.T) {
	slower := bench.SlowerNote + 0.5*rand.Float64()
	for _, tc := range []struct {
		slower float64
		note   bool
	}{{0, false}, {bench.SlowerNote / 2, false}, {slower, true}} {
		r := &bench.Report{Device: "sim:0", Profile: "sim's defaults", Plans: []bench.Plan{
			{Size: 4096, Direction: "HtoD", Host: "pageable", Pick: "direct", PickGBps: 1, Best: "direct", BestGBps: 1},
			{Size: 1 << 20, Direction: "HtoD", Host: "pinned", Pick: "pinned", PickGBps: 1, Best: "mapped", BestGBps: 1 + tc.slower, Slower: tc.slower},
		}}
		table := r.Table()
		if !tc.note {
			assert.NotContains(t, table, "is not a failure", "%.2f slower", tc.slower)
			continue
		}
		assert.Contains(t, table, fmt.Sprintf("a pick up to %.0f%% slower than the best measured is not a failure: the planner predicts from its profile (sim's defaults)", tc.slower*100))
	}
}
