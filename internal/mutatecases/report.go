package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// The statuses gremlins writes for a mutant (mutator.Status in gremlins v0.6.0).
const (
	StatusNotCovered = "NOT COVERED"
	StatusRunnable   = "RUNNABLE"
	StatusSkipped    = "SKIPPED"
	StatusLived      = "LIVED"
	StatusKilled     = "KILLED"
	StatusNotViable  = "NOT VIABLE"
	StatusTimedOut   = "TIMED OUT"
)

var knownStatuses = []string{
	StatusNotCovered, StatusRunnable, StatusSkipped, StatusLived, StatusKilled, StatusNotViable, StatusTimedOut,
}

// Mutant is one mutant as gremlins names it: its mutator, its status, and the
// position of its operator token in a file of the package (a slash-separated
// path relative to the package's folder, as gremlins writes it).
type Mutant struct {
	File   string
	Line   int
	Column int
	Type   string
	Status string
}

// String names the mutant as gremlins' log does: TYPE at file:line:column.
func (m Mutant) String() string {
	return fmt.Sprintf("%s at %s:%d:%d", m.Type, m.File, m.Line, m.Column)
}

// Report is what gremlins found for one package: every mutant, and the
// counts and figures it printed.
type Report struct {
	Module     string
	Mutants    []Mutant
	Killed     int
	Lived      int
	NotCovered int
	NotViable  int
	TimedOut   int
	Efficacy   float64 // gremlins' test efficacy, in percent
	Coverage   float64 // gremlins' mutator coverage, in percent
}

// gremlinsOutput is the JSON that `gremlins unleash -o FILE` writes
// (internal/report/internal.OutputResult in gremlins v0.6.0).
type gremlinsOutput struct {
	GoModule string `json:"go_module"`
	Files    []struct {
		Filename  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
	TestEfficacy      float64 `json:"test_efficacy"`
	MutationsCoverage float64 `json:"mutations_coverage"`
	MutantsKilled     int     `json:"mutants_killed"`
	MutantsLived      int     `json:"mutants_lived"`
	MutantsNotViable  int     `json:"mutants_not_viable"`
	MutantsNotCovered int     `json:"mutants_not_covered"`
}

// ParseReport reads gremlins' JSON output. It refuses a mutant with an unknown
// status or mutator, a position before line 1 or column 1, a file name that is
// not a local .go path (it becomes a path in the copy of the module), and
// counts that disagree with the mutants listed. The mutants come sorted by
// file, line, column and mutator.
func ParseReport(r io.Reader) (Report, error) {
	var out gremlinsOutput
	dec := json.NewDecoder(r)
	if err := dec.Decode(&out); err != nil {
		return Report{}, fmt.Errorf("mutatecases: gremlins output: %w", err)
	}
	if dec.More() {
		return Report{}, errors.New("mutatecases: gremlins output: more than one JSON value")
	}
	rep := Report{Module: out.GoModule, Efficacy: out.TestEfficacy, Coverage: out.MutationsCoverage}
	for _, f := range out.Files {
		if err := checkFileName(f.Filename); err != nil {
			return Report{}, err
		}
		for _, m := range f.Mutations {
			mut := Mutant{File: f.Filename, Line: m.Line, Column: m.Column, Type: m.Type, Status: m.Status}
			if m.Line < 1 || m.Column < 1 {
				return Report{}, fmt.Errorf("mutatecases: gremlins output: %v: no such position", mut)
			}
			if !slices.Contains(knownStatuses, m.Status) {
				return Report{}, fmt.Errorf("mutatecases: gremlins output: %v: unknown status %q", mut, m.Status)
			}
			if _, ok := mutations[m.Type]; !ok {
				return Report{}, fmt.Errorf("mutatecases: gremlins output: %v: unknown mutator %q", mut, m.Type)
			}
			rep.count(m.Status)
			rep.Mutants = append(rep.Mutants, mut)
		}
	}
	for _, c := range []struct {
		what        string
		listed, sum int
	}{
		{"killed", rep.Killed, out.MutantsKilled},
		{"lived", rep.Lived, out.MutantsLived},
		{"not viable", rep.NotViable, out.MutantsNotViable},
		{"not covered", rep.NotCovered, out.MutantsNotCovered},
	} {
		if c.listed != c.sum {
			return Report{}, fmt.Errorf("mutatecases: gremlins output: %d mutants %s listed, its summary says %d",
				c.listed, c.what, c.sum)
		}
	}
	slices.SortFunc(rep.Mutants, compareMutants)
	return rep, nil
}

func (r *Report) count(status string) {
	switch status {
	case StatusKilled:
		r.Killed++
	case StatusLived:
		r.Lived++
	case StatusNotCovered:
		r.NotCovered++
	case StatusNotViable:
		r.NotViable++
	case StatusTimedOut:
		r.TimedOut++
	}
}

// checkFileName refuses a file name that would lead out of the package's
// folder, or that is not a Go source file.
func checkFileName(name string) error {
	if name == "" || strings.ContainsRune(name, '\\') || !strings.HasSuffix(name, ".go") ||
		path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("mutatecases: gremlins output: file name %q is not a Go file inside the package", name)
	}
	return nil
}

func compareMutants(a, b Mutant) int {
	if c := strings.Compare(a.File, b.File); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Line, b.Line); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Column, b.Column); c != 0 {
		return c
	}
	return strings.Compare(a.Type, b.Type)
}
