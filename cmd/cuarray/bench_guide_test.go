package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// benchRow is a row of `cuarray bench`'s table: the cells the guide's
// unified-memory table is checked by.
type benchRow struct {
	path, dir, size string
	reps            int
	gbps, vsPinned  float64 // vsPinned is 0 where the cell is "-"
	ledger          string
}

// benchRows parses the rows of a `cuarray bench` table (columns path, dir,
// size, reps, GB/s, min, max, ceiling, vs pinned, ledger, planner) in text.
func benchRows(t *testing.T, text string) []benchRow {
	t.Helper()
	row := regexp.MustCompile(`(?m)^\s*(go-copy|pinned|managed[-a-z]*)\s+(HtoH|HtoD|DtoH)\s+(\d+\.\d\d [KMG]?i?B)\s+(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+(?:[\d.]+|-)\s+([\d.]+|-)\s+(-|ok(?: \d+ faults)?(?: \d+ dup)?)(?: (?:pick|overall pick)[^\n]*)?$`)
	var rows []benchRow
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		r := benchRow{path: m[1], dir: m[2], size: m[3], ledger: m[7]}
		var err error
		r.reps, err = strconv.Atoi(m[4])
		require.NoError(t, err)
		r.gbps, err = strconv.ParseFloat(m[5], 64)
		require.NoError(t, err)
		if m[6] != "-" {
			r.vsPinned, err = strconv.ParseFloat(m[6], 64)
			require.NoError(t, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestGuideManagedTable: the guide's unified-memory table (docs/guide.md,
// "Unified memory") has the rows `cuarray bench -paths pinned -managed
// all` prints now, in its order, each with the ledger's verdict and the
// faults it must show (one a 4 KiB page a repeat, and a read-only copy a
// page a repeat for read-mostly), and each vs pinned its GB/s over the
// pinned row's of the same direction and size in the same table.
func TestGuideManagedTable(t *testing.T) {
	guide, err := os.ReadFile("../../docs/guide.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(guide), "<!-- checked by: cmd/cuarray TestGuideManagedTable -->\n```text\n")
	require.True(t, ok, "the guide shows the table under its marker")
	block, _, ok := strings.Cut(after, "\n```")
	require.True(t, ok)
	shown := benchRows(t, block)
	require.Len(t, shown, strings.Count(block, "\n"), "every row of the guide's table parses:\n%s", block)

	// The rows a run prints now, at a size of its own: the same paths and directions, in order.
	code, out, stderr := runCmd("bench", "-device", "sim:0?mem=64MiB", "-sizes", "64KiB", "-budget", "256KiB",
		"-paths", "pinned", "-managed", "all", "-q")
	require.Equal(t, 0, code, stderr)
	now := benchRows(t, out)
	require.NotEmpty(t, now, out)
	sizes := 0
	for i, r := range shown {
		if r.path == "go-copy" {
			sizes++
		}
		want := now[i%len(now)]
		assert.Equal(t, want.path+" "+want.dir, r.path+" "+r.dir, "row %d of the guide's table", i+1)
		assert.Equal(t, ledgerForm(want.ledger), ledgerForm(r.ledger), "row %d: the ledger column", i+1)
		if strings.HasPrefix(r.path, "managed") {
			n, err := accounting.ParseBytes(strings.ReplaceAll(r.size, " ", ""))
			require.NoError(t, err)
			faults := strconv.FormatInt((n+4095)/4096*int64(r.reps), 10)
			switch r.ledger {
			case "ok":
				assert.Equal(t, "managed-prefetch", r.path, "row %d: only a prefetch takes no fault", i+1)
			case "ok " + faults + " faults":
				assert.Equal(t, "managed", r.path, "row %d", i+1)
			default:
				assert.Equal(t, "ok "+faults+" faults "+faults+" dup", r.ledger, "row %d: a fault a page a repeat", i+1)
			}
		}
		if r.vsPinned > 0 {
			for _, p := range shown {
				if p.path == "pinned" && p.dir == r.dir && p.size == r.size {
					assert.InDelta(t, r.gbps/p.gbps, r.vsPinned, 0.006+0.01*r.vsPinned, "row %d: vs pinned", i+1)
				}
			}
		}
	}
	assert.Equal(t, len(shown), sizes*len(now), "each size shows every row a run prints")
}

// ledgerForm is a ledger cell without its counts: "ok", "ok N faults", "ok N faults N dup".
func ledgerForm(cell string) string {
	return regexp.MustCompile(`\d+`).ReplaceAllString(cell, "N")
}
