package main

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	vals := []float64{10 + r.Float64(), 20 + r.Float64(), 30 + r.Float64()}
	var bench strings.Builder
	for _, i := range r.Perm(3) {
		fmt.Fprintf(&bench, "BenchmarkPool/256-2   \t 1000\t %.4f ns/op\t %.4f x-faster\t 0 B/op\n", vals[i], vals[i]/10)
	}
	for _, tc := range []struct {
		name  string
		input string
		check func(t *testing.T, steps []Step)
		err   string
	}{
		{
			name:  "benchmarks over repetitions",
			input: "== pool: go test -bench X ./pool\ngoos: linux\n" + bench.String() + "PASS\n== rc 0\n",
			check: func(t *testing.T, steps []Step) {
				require.Len(t, steps, 1)
				s := steps[0]
				assert.Equal(t, "pool", s.Name)
				assert.Equal(t, "go test -bench X ./pool", s.Command)
				require.Len(t, s.Figures, 3, "ns/op, x-faster and B/op")
				f := s.Figures[0]
				assert.Equal(t, "Pool/256", f.Benchmark, "the -P suffix goes")
				assert.Equal(t, "ns/op", f.Unit)
				assert.Equal(t, 3, f.N)
				assert.InDelta(t, slices.Min(vals), f.Min, 1e-3)
				assert.InDelta(t, vals[1], f.Median, 1e-3)
				assert.InDelta(t, slices.Max(vals), f.Max, 1e-3)
				assert.InDelta(t, vals[1]/10, s.Figures[1].Median, 1e-3)
			},
		},
		{
			name:  "a JSON line and a failed step",
			input: "== skimage: python3 x.py\ntable\n{\"ratio\": 3.5}\n== rc 0\n== bidir: go test -run TestBidir ./bench\n    events_test.go:152: bidir 0.100 GB/s\n--- FAIL\n== rc 1\n",
			check: func(t *testing.T, steps []Step) {
				require.Len(t, steps, 2)
				require.Len(t, steps[0].JSON, 1)
				assert.InDelta(t, 3.5, steps[0].JSON[0]["ratio"], 1e-9)
				assert.Equal(t, 1, steps[1].RC)
				assert.Empty(t, steps[1].Figures)
				assert.Equal(t, []string{"bidir 0.100 GB/s"}, steps[1].Log, "a test's log line")
			},
		},
		{
			name:  "a script's own lines",
			input: "== driver-call: bash x.sh\none\ntwo\nthree\nx.sh: up 43.8 ns/op\nx.sh: ratio 0.985\n== rc 0\n",
			check: func(t *testing.T, steps []Step) {
				require.Len(t, steps, 1)
				assert.Equal(t, []string{"two", "three", "x.sh: up 43.8 ns/op", "x.sh: ratio 0.985"}, steps[0].Log, "its last lines")
			},
		},
		{name: "no rc line", input: "== a: cmd\nBenchmarkX 1 2 ns/op\n", err: "has no rc line"},
		{name: "rc outside a step", input: "== rc 0\n", err: "outside a step"},
		{name: "a step inside a step", input: "== a: cmd\n== b: cmd\n== rc 0\n", err: "starts before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := Parse(strings.NewReader(tc.input))
			if tc.err != "" {
				require.ErrorIs(t, err, errFormat)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, steps)
		})
	}
}

// TestRunWritesJSONAndMarkdown runs the command on a bench script's output
// and reads back both files. Each figure is expected as it was written
// (%.3f) and parsed back, never as the value it was made from: the two
// round to different table cells when the written value lies on a rounding
// boundary (122.2502 is written 122.250, whose four digits are 122.2, not
// 122.3), which the fixed cases hold.
func TestRunWritesJSONAndMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    float64
		cell string // the table's median when the test knows it; "" for a random figure
	}{
		{name: "random", v: 100 + rand.Float64()*50},
		{name: "written up to a boundary that rounds down", v: 122.2496, cell: "122.2"},
		{name: "written down to a boundary that rounds down", v: 122.2502, cell: "122.2"},
		{name: "written down to a boundary that rounds up", v: 121.7503, cell: "121.8"},
		{name: "written up to a boundary that rounds up", v: 121.7497, cell: "121.8"},
		{name: "trailing zeros", v: 110.0004, cell: "110"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			figure := fmt.Sprintf("%.3f", tc.v)
			written, err := strconv.ParseFloat(figure, 64)
			require.NoError(t, err)
			in := filepath.Join(dir, "out.txt")
			require.NoError(t, os.WriteFile(in, []byte("== ledger: go test -bench Y ./accounting\nBenchmarkY-2 10 "+figure+" ns/event 7 B/op\n== rc 0\n"), 0o644))
			js, md := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.md")
			require.NoError(t, run(in, "abc1234", "2026-11-25", js, md))
			var rep Report
			raw, err := os.ReadFile(js)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &rep))
			assert.Equal(t, "abc1234", rep.Commit)
			require.Len(t, rep.Steps, 1)
			require.NotEmpty(t, rep.Steps[0].Figures)
			assert.Equal(t, written, rep.Steps[0].Figures[0].Median, "the median is the figure as written (%s)", figure)
			text, err := os.ReadFile(md)
			require.NoError(t, err)
			assert.Contains(t, string(text), "at commit abc1234")
			assert.Contains(t, string(text), "`go test -bench Y ./accounting`")
			m := num(written)
			if tc.cell != "" {
				assert.Equal(t, tc.cell, m, "four significant digits of %s", figure)
			}
			assert.Contains(t, string(text), "| Y | ns/event | "+m+" | "+m+"–"+m+" | 1 |\n")
			cell, err := strconv.ParseFloat(m, 64)
			require.NoError(t, err)
			// half the last digit's step, and the float error of 0.05 itself
			assert.InDelta(t, written, cell, 0.05+1e-9, "the table's median %s is %s to four digits", m, figure)
			assert.NotContains(t, string(text), "B/op", "the table leaves the allocation units to the JSON")
		})
	}
	dir := t.TempDir()
	require.Error(t, run(filepath.Join(dir, "missing.txt"), "", "", filepath.Join(dir, "b.json"), filepath.Join(dir, "b.md")), "a missing input is an error")
}

func TestSplice(t *testing.T) {
	md := fmt.Sprintf("Generated at commit %x.\n\n| a | b |\n", rand.Uint32())
	for _, tc := range []struct {
		name, doc, want, err string
	}{
		{"replaces the section", "# T\n\n<!-- bench-sim: begin (x) -->\nold\nlines\n<!-- bench-sim: end -->\ntail\n",
			"# T\n\n<!-- bench-sim: begin (x) -->\n" + md + "<!-- bench-sim: end -->\ntail\n", ""},
		{"an empty section", "<!-- bench-sim: begin -->\n<!-- bench-sim: end -->\n", "<!-- bench-sim: begin -->\n" + md + "<!-- bench-sim: end -->\n", ""},
		{"no begin", "x\n<!-- bench-sim: end -->\n", "", "no"},
		{"no end", "<!-- bench-sim: begin -->\nx\n", "", "no"},
		{"end before begin", "<!-- bench-sim: end -->\n<!-- bench-sim: begin -->\n", "", "after the begin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Splice(tc.doc, md)
			if tc.err != "" {
				require.ErrorIs(t, err, errFormat)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	dir := t.TempDir()
	doc, mdFile := filepath.Join(dir, "perf.md"), filepath.Join(dir, "b.md")
	require.NoError(t, os.WriteFile(doc, []byte("a\n<!-- bench-sim: begin -->\nold\n<!-- bench-sim: end -->\n"), 0o644))
	require.NoError(t, os.WriteFile(mdFile, []byte(md), 0o644))
	require.NoError(t, spliceFile(doc, mdFile))
	got, err := os.ReadFile(doc)
	require.NoError(t, err)
	assert.Equal(t, "a\n<!-- bench-sim: begin -->\n"+md+"<!-- bench-sim: end -->\n", string(got))
	require.Error(t, spliceFile(doc, filepath.Join(dir, "missing.md")))
}
