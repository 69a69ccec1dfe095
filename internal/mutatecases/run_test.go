package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tinySource is a package with a tagless switch whose case mutants the test
// below partly kills, a tagged switch whose mutants do not compile, a switch
// no test reaches, a constant, and an if no test reaches.
const tinySource = `package sw

const limit = 2 + 1

// Sign is -1, 0 or 1.
func Sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

const one = 1

// Pick names 0 and 2.
func Pick(x int) string {
	switch x {
	case one - 1:
		return "zero"
	case one + 1:
		return "two"
	}
	return "other"
}

// Never is not tested.
func Never(x int) bool {
	switch {
	case x == 3:
		return true
	}
	return false
}

// Unrun is not tested either.
func Unrun(x int) bool {
	if x != 7 {
		return true
	}
	return false
}
`

// tinyTests kill the negations of Sign's cases but not their boundaries (no
// test of 0), and the constant's mutant.
const tinyTests = `package sw

import "testing"

func TestSign(t *testing.T) {
	if Sign(-5) != -1 || Sign(5) != 1 {
		t.Fatal("Sign")
	}
}

func TestLimit(t *testing.T) {
	if limit != 3 {
		t.Fatal("limit")
	}
}

func TestPick(t *testing.T) {
	if Pick(0) != "zero" || Pick(2) != "two" {
		t.Fatal("Pick")
	}
}
`

// operatorAfter returns the line and column of the first op after the text
// anchor in src.
func operatorAfter(t *testing.T, src, anchor, op string) (int, int) {
	t.Helper()
	i := strings.Index(src, anchor)
	require.GreaterOrEqual(t, i, 0, anchor)
	j := strings.Index(src[i:], op)
	require.GreaterOrEqual(t, j, 0, op)
	i += j
	return strings.Count(src[:i], "\n") + 1, i - strings.LastIndex(src[:i], "\n")
}

func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the tests of a small module once per mutant")
	}
	offline(t)
	root := tinyModule(t, map[string]string{"sw/sw.go": tinySource, "sw/sw_test.go": tinyTests})
	mutant := func(anchor, op, typ, status string) Mutant {
		l, c := operatorAfter(t, tinySource, anchor, op)
		return Mutant{File: "sw.go", Line: l, Column: c, Type: typ, Status: status}
	}
	notCovered := []Mutant{
		mutant("case x < 0", "<", "CONDITIONALS_NEGATION", StatusNotCovered),
		mutant("case x < 0", "<", "CONDITIONALS_BOUNDARY", StatusNotCovered),
		mutant("case x > 0", ">", "CONDITIONALS_NEGATION", StatusNotCovered),
		mutant("case x > 0", ">", "CONDITIONALS_BOUNDARY", StatusNotCovered),
		mutant("case one - 1", "-", "ARITHMETIC_BASE", StatusNotCovered),
		mutant("case one - 1", "-", "INVERT_NEGATIVES", StatusNotCovered),
		mutant("case one + 1", "+", "ARITHMETIC_BASE", StatusNotCovered),
		mutant("case x == 3", "==", "CONDITIONALS_NEGATION", StatusNotCovered),
		mutant("const limit", "+", "ARITHMETIC_BASE", StatusNotCovered),
		mutant("if x != 7", "!=", "CONDITIONALS_NEGATION", StatusNotCovered),
	}
	// gremlins' own results elsewhere in the package; only their counts matter.
	gremlins := append([]Mutant{}, notCovered...)
	for i := range 10 {
		gremlins = append(gremlins, Mutant{File: "sw.go", Line: 1, Column: 1 + i, Type: "ARITHMETIC_BASE", Status: StatusKilled})
	}
	for i := range 2 {
		gremlins = append(gremlins, Mutant{File: "sw.go", Line: 2, Column: 1 + i, Type: "ARITHMETIC_BASE", Status: StatusLived})
	}
	jsonFile := filepath.Join(t.TempDir(), "sw.json")
	require.NoError(t, os.WriteFile(jsonFile, gremlinsJSON(t, gremlins, nil), 0o644))
	before := snapshot(t, root)
	temp := t.TempDir()

	var out bytes.Buffer
	err := Run(context.Background(), Options{
		JSON: jsonFile, Pkg: "./sw", Root: root, TimeoutCoefficient: 60, Workers: 2, TempParent: temp,
	}, &out)
	require.NoError(t, err, out.String())
	log := out.String()
	t.Log(log)

	status := map[string]string{}
	line := regexp.MustCompile(`^ *(KILLED|LIVED|TIMED OUT|NOT VIABLE|NOT COVERED) (\S+ at \S+) \(mutatecases: `)
	for _, l := range strings.Split(log, "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			status[m[2]] = m[1]
		}
	}
	want := map[string]string{
		notCovered[0].String(): StatusKilled,    // x >= 0: Sign(-5) is 0
		notCovered[1].String(): StatusLived,     // x <= 0: no test of 0
		notCovered[2].String(): StatusKilled,    // x <= 0: Sign(5) is 0
		notCovered[3].String(): StatusLived,     // x >= 0: no test of 0
		notCovered[4].String(): StatusNotViable, // one + 1 twice: a duplicate case
		notCovered[5].String(): StatusNotViable,
		notCovered[6].String(): StatusNotViable, // one - 1 twice
		notCovered[7].String(): StatusNotCovered,
		notCovered[8].String(): StatusKilled, // limit is 1
	}
	assert.Equal(t, want, status, "each mutant's outcome; the if's mutant is not one of mutatecases'\n%s", log)
	assert.Contains(t, log, "9 of gremlins' 10 NOT COVERED mutants lie in a case condition (8) or a constant (1)")
	assert.Contains(t, log, "case and const mutants: Killed: 3, Lived: 2, Timed out: 0, Not viable: 3")
	assert.Contains(t, log, "gremlins + case and const: test efficacy 76.47%, mutator coverage 89.47% (killed 13, lived 4, not covered 2)")
	assert.Contains(t, log, "gremlins alone:           test efficacy 83.33%, mutator coverage 54.55% (killed 10, lived 2, not covered 10)")

	assert.Equal(t, before, snapshot(t, root), "the module is as it was")
	left, err := os.ReadDir(temp)
	require.NoError(t, err)
	assert.Empty(t, left, "the copies of the module are removed")
}

func TestRunWithNothingToRun(t *testing.T) {
	root := tinyModule(t, map[string]string{"sw/sw.go": tinySource})
	l, c := operatorAfter(t, tinySource, "if x != 7", "!=")
	jsonFile := filepath.Join(t.TempDir(), "sw.json")
	require.NoError(t, os.WriteFile(jsonFile, gremlinsJSON(t, []Mutant{
		{File: "sw.go", Line: l, Column: c, Type: "CONDITIONALS_NEGATION", Status: StatusNotCovered},
		{File: "sw.go", Line: 1, Column: 1, Type: "ARITHMETIC_BASE", Status: StatusKilled},
	}, nil), 0o644))
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), Options{
		JSON: jsonFile, Pkg: "sw", Root: root, TimeoutCoefficient: 10, Workers: 1, TempParent: t.TempDir(),
	}, &out))
	assert.Contains(t, out.String(), "0 of gremlins' 1 NOT COVERED mutants")
	assert.Contains(t, out.String(), "gremlins + case and const: test efficacy 100.00%, mutator coverage 50.00% (killed 1, lived 0, not covered 1)")
}

func TestRunRefuses(t *testing.T) {
	root := tinyModule(t, map[string]string{"sw/sw.go": tinySource})
	write := func(mutants []Mutant) string {
		name := filepath.Join(t.TempDir(), "g.json")
		require.NoError(t, os.WriteFile(name, gremlinsJSON(t, mutants, nil), 0o644))
		return name
	}
	good := write(nil)
	for _, tc := range []struct {
		name    string
		opts    Options
		refusal string
	}{
		{"package outside the module", Options{JSON: good, Pkg: "../x", Root: root, TimeoutCoefficient: 1, Workers: 1}, "not a folder inside the module"},
		{"no coefficient", Options{JSON: good, Pkg: "./sw", Root: root, Workers: 1}, "must be at least 1"},
		{"no workers", Options{JSON: good, Pkg: "./sw", Root: root, TimeoutCoefficient: 1}, "must be at least 1"},
		{"no gremlins output", Options{JSON: filepath.Join(root, "none.json"), Pkg: "./sw", Root: root, TimeoutCoefficient: 1, Workers: 1}, "no such file"},
		{"a position the source does not have", Options{JSON: write([]Mutant{{File: "sw.go", Line: 500, Column: 1, Type: "ARITHMETIC_BASE", Status: StatusNotCovered}}),
			Pkg: "./sw", Root: root, TimeoutCoefficient: 1, Workers: 1}, "has the source changed since gremlins ran?"},
		{"a file the package does not have", Options{JSON: write([]Mutant{{File: "gone.go", Line: 5, Column: 1, Type: "ARITHMETIC_BASE", Status: StatusNotCovered}}),
			Pkg: "./sw", Root: root, TimeoutCoefficient: 1, Workers: 1}, "gone.go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(context.Background(), tc.opts, &bytes.Buffer{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.refusal)
		})
	}
}

func TestModulePath(t *testing.T) {
	for _, tc := range []struct{ gomod, want string }{
		{"module example.com/a\n\ngo 1.21\n", "example.com/a"},
		{"// a comment\nmodule \"example.com/q\" // quoted\n", "example.com/q"},
		{"modules x\nmodule\texample.com/tab\n", "example.com/tab"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(tc.gomod), 0o644))
		got, err := modulePath(dir)
		require.NoError(t, err, tc.gomod)
		assert.Equal(t, tc.want, got)
		sub := filepath.Join(dir, "a", "b")
		require.NoError(t, os.MkdirAll(sub, 0o755))
		found, err := moduleRoot(sub)
		require.NoError(t, err)
		assert.Equal(t, dir, found, "the module's root is found from a folder inside it")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("go 1.21\n"), 0o644))
	_, err := modulePath(dir)
	assert.Error(t, err, "a go.mod without a module line")
}

// snapshot returns every file under dir with its contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		files[p] = string(data)
		return err
	}))
	return files
}

// cancelAfterWrite cancels its context a while after a write that contains text.
type cancelAfterWrite struct {
	bytes.Buffer
	text   string
	after  time.Duration
	cancel context.CancelFunc
}

func (w *cancelAfterWrite) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.text) {
		time.AfterFunc(w.after, w.cancel)
	}
	return w.Buffer.Write(p)
}

// TestRunStopped stops a run while a mutant's tests hang: Run returns at
// once with the context's error, and leaves no copy behind and the module
// as it was.
func TestRunStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the tests of a small module")
	}
	offline(t)
	hang := strings.Replace(tinyTests, `t.Fatal("Sign")`, `time.Sleep(5 * time.Minute)`, 1)
	hang = strings.Replace(hang, `import "testing"`, "import (\n\t\"testing\"\n\t\"time\"\n)", 1)
	root := tinyModule(t, map[string]string{"sw/sw.go": tinySource, "sw/sw_test.go": hang})
	l, c := operatorAfter(t, tinySource, "case x > 0", ">")
	jsonFile := filepath.Join(t.TempDir(), "sw.json")
	require.NoError(t, os.WriteFile(jsonFile, gremlinsJSON(t, []Mutant{
		{File: "sw.go", Line: l, Column: c, Type: "CONDITIONALS_NEGATION", Status: StatusNotCovered},
	}, nil), 0o644))
	before := snapshot(t, root)
	temp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Three seconds after the cover run, the mutant's tests are sleeping.
	w := &cancelAfterWrite{text: "cover run took", after: 3 * time.Second, cancel: cancel}
	start := time.Now()
	err := Run(ctx, Options{JSON: jsonFile, Pkg: "./sw", Root: root, TimeoutCoefficient: 1000, Workers: 1, TempParent: temp}, w)
	require.ErrorIs(t, err, context.Canceled, w.String())
	assert.Less(t, time.Since(start), time.Minute, "the hanging tests are killed")
	assert.Equal(t, before, snapshot(t, root), "the module is as it was")
	left, err := os.ReadDir(temp)
	require.NoError(t, err)
	assert.Empty(t, left, "the copy of the module is removed")
}

// FuzzParseModulePath checks that parseModulePath never panics and that a
// path it returns is one word, without quotes.
func FuzzParseModulePath(f *testing.F) {
	f.Add("module example.com/a\n\ngo 1.21\n")
	f.Add("module \"example.com/q\" // quoted\n")
	f.Add("module\n")
	f.Fuzz(func(t *testing.T, gomod string) {
		p, err := parseModulePath([]byte(gomod))
		if err != nil {
			return
		}
		require.NotEmpty(t, p)
		require.False(t, strings.ContainsAny(p, " \t\n\"`"), "%q", p)
	})
}
