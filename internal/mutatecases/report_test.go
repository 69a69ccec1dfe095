package main

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type jsonMutation struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

type jsonFile struct {
	Filename  string         `json:"file_name"`
	Mutations []jsonMutation `json:"mutations"`
}

// gremlinsJSON writes mutants as gremlins' -o output does, with the
// summary counts taken from them unless summary overrides them.
func gremlinsJSON(t testing.TB, mutants []Mutant, summary map[string]int) []byte {
	t.Helper()
	byFile := map[string][]jsonMutation{}
	var order []string
	counts := map[string]int{}
	for _, m := range mutants {
		if _, ok := byFile[m.File]; !ok {
			order = append(order, m.File)
		}
		byFile[m.File] = append(byFile[m.File], jsonMutation{m.Type, m.Status, m.Line, m.Column})
		counts[m.Status]++
	}
	var files []jsonFile
	for _, f := range order {
		files = append(files, jsonFile{f, byFile[f]})
	}
	k, l, nc := counts[StatusKilled], counts[StatusLived], counts[StatusNotCovered]
	out := map[string]any{
		"go_module": "example.com/m", "files": files,
		"test_efficacy": 100 * float64(k) / float64(max(k+l, 1)), "mutations_coverage": 100 * float64(k+l) / float64(max(k+l+nc, 1)),
		"mutants_total": k + l + counts[StatusNotViable], "mutants_killed": k, "mutants_lived": l,
		"mutants_not_viable": counts[StatusNotViable], "mutants_not_covered": nc, "elapsed_time": 1.5,
		"mutator_statistics": map[string]int{"conditionals_negation": len(mutants)},
	}
	for key, v := range summary {
		out[key] = v
	}
	data, err := json.Marshal(out)
	require.NoError(t, err)
	return data
}

// randomMutants returns n mutants at random, each at a place and of a
// mutator of its own, as gremlins reports them: two that differ only in
// status would sort in either order (compareMutants does not look at the
// status), and the order ParseReport gives them could not be foretold.
func randomMutants(r *rand.Rand, n int) []Mutant {
	types := []string{"ARITHMETIC_BASE", "CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION", "INCREMENT_DECREMENT", "INVERT_NEGATIVES"}
	files := []string{"a.go", "b.go", "sub/c.go"}
	out := make([]Mutant, 0, n)
	for len(out) < n {
		m := Mutant{
			File: files[r.IntN(len(files))], Line: 1 + r.IntN(500), Column: 1 + r.IntN(80),
			Type: types[r.IntN(len(types))], Status: knownStatuses[r.IntN(len(knownStatuses))],
		}
		if !slices.ContainsFunc(out, func(o Mutant) bool { return compareMutants(o, m) == 0 }) {
			out = append(out, m)
		}
	}
	return out
}

func TestParseReport(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	mutants := randomMutants(r, 20+r.IntN(50))
	rep, err := ParseReport(strings.NewReader(string(gremlinsJSON(t, mutants, nil))))
	require.NoError(t, err)
	assert.Equal(t, "example.com/m", rep.Module)
	want := slices.Clone(mutants)
	slices.SortFunc(want, compareMutants)
	assert.Equal(t, want, rep.Mutants, "every mutant, sorted")
	count := func(status string) int {
		n := 0
		for _, m := range mutants {
			if m.Status == status {
				n++
			}
		}
		return n
	}
	assert.Equal(t, count(StatusKilled), rep.Killed)
	assert.Equal(t, count(StatusLived), rep.Lived)
	assert.Equal(t, count(StatusNotCovered), rep.NotCovered)
	assert.Equal(t, count(StatusNotViable), rep.NotViable)
	assert.Equal(t, count(StatusTimedOut), rep.TimedOut)
	k, l := float64(rep.Killed), float64(rep.Lived)
	assert.InDelta(t, 100*k/max(k+l, 1), rep.Efficacy, 1e-9, "gremlins' own efficacy is kept")
}

func TestParseReportRefuses(t *testing.T) {
	good := Mutant{File: "a.go", Line: 3, Column: 7, Type: "CONDITIONALS_NEGATION", Status: StatusNotCovered}
	with := func(change func(*Mutant)) []Mutant {
		m := good
		change(&m)
		return []Mutant{m}
	}
	for _, tc := range []struct {
		name    string
		json    string
		refusal string
	}{
		{"not JSON", "NOT COVERED CONDITIONALS_NEGATION at a.go:3:7", "gremlins output"},
		{"two values", string(gremlinsJSON(t, []Mutant{good}, nil)) + "{}", "more than one JSON value"},
		{"unknown status", string(gremlinsJSON(t, with(func(m *Mutant) { m.Status = "MAYBE" }), nil)), `unknown status "MAYBE"`},
		{"unknown mutator", string(gremlinsJSON(t, with(func(m *Mutant) { m.Type = "SWAP" }), nil)), `unknown mutator "SWAP"`},
		{"line 0", string(gremlinsJSON(t, with(func(m *Mutant) { m.Line = 0 }), nil)), "no such position"},
		{"negative column", string(gremlinsJSON(t, with(func(m *Mutant) { m.Column = -4 }), nil)), "no such position"},
		{"file above the package", string(gremlinsJSON(t, with(func(m *Mutant) { m.File = "../x.go" }), nil)), "not a Go file inside the package"},
		{"absolute file", string(gremlinsJSON(t, with(func(m *Mutant) { m.File = "/etc/x.go" }), nil)), "not a Go file inside the package"},
		{"unclean file", string(gremlinsJSON(t, with(func(m *Mutant) { m.File = "sub/../a.go" }), nil)), "not a Go file inside the package"},
		{"backslash", string(gremlinsJSON(t, with(func(m *Mutant) { m.File = `sub\a.go` }), nil)), "not a Go file inside the package"},
		{"not Go", string(gremlinsJSON(t, with(func(m *Mutant) { m.File = "a.txt" }), nil)), "not a Go file inside the package"},
		{"summary disagrees", string(gremlinsJSON(t, []Mutant{good}, map[string]int{"mutants_not_covered": 2})), "1 mutants not covered listed, its summary says 2"},
		{"killed disagree", string(gremlinsJSON(t, []Mutant{good}, map[string]int{"mutants_killed": 5})), "0 mutants killed listed, its summary says 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseReport(strings.NewReader(tc.json))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.refusal)
		})
	}
}

// FuzzParseReport checks that ParseReport never panics and that what it
// accepts holds: valid positions and names, counts that match the mutants,
// mutants in order, and the same report when written back and read again.
func FuzzParseReport(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	f.Add(string(gremlinsJSON(f, randomMutants(r, 6), nil)))
	f.Add(string(gremlinsJSON(f, nil, nil)))
	f.Add(`{"go_module":"m","files":[{"file_name":"x.go","mutations":[{"type":"INVERT_NEGATIVES","status":"NOT COVERED","line":1,"column":1}]}],"mutants_not_covered":1}`)
	f.Add(`{"files":[{"file_name":"../x.go","mutations":[]}]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, data string) {
		rep, err := ParseReport(strings.NewReader(data))
		if err != nil {
			return
		}
		counts := map[string]int{}
		for i, m := range rep.Mutants {
			require.GreaterOrEqual(t, m.Line, 1)
			require.GreaterOrEqual(t, m.Column, 1)
			require.NoError(t, checkFileName(m.File))
			require.Contains(t, knownStatuses, m.Status)
			require.Contains(t, mutations, m.Type)
			if i > 0 {
				require.LessOrEqual(t, compareMutants(rep.Mutants[i-1], m), 0, "sorted")
			}
			counts[m.Status]++
		}
		require.Equal(t, counts[StatusKilled], rep.Killed)
		require.Equal(t, counts[StatusLived], rep.Lived)
		require.Equal(t, counts[StatusNotCovered], rep.NotCovered)
		require.Equal(t, counts[StatusNotViable], rep.NotViable)
		require.Equal(t, counts[StatusTimedOut], rep.TimedOut)
		again, err := ParseReport(strings.NewReader(string(gremlinsJSON(t, rep.Mutants, nil))))
		require.NoError(t, err, "a report written back reads again")
		require.Equal(t, rep.Mutants, again.Mutants)
	})
}

func TestMutantString(t *testing.T) {
	m := Mutant{File: "sub/a.go", Line: 12, Column: 40, Type: "INVERT_NEGATIVES", Status: StatusLived}
	assert.Equal(t, "INVERT_NEGATIVES at sub/a.go:12:40", m.String())
	assert.Equal(t, fmt.Sprintf("%12s", "LIVED"), pad(StatusLived), "gremlins' padding")
}
