package main

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Status is what became of a top-level test in one run of a test binary.
type Status string

const (
	Pass  Status = "pass"
	Fail  Status = "fail"
	Skip  Status = "skip"
	Hung  Status = "hung"  // running when the binary's timeout struck, or when it was killed
	Crash Status = "crash" // running when the binary died otherwise (a panic elsewhere, a signal)
)

// Test is one top-level test of a run.
type Test struct {
	Name   string
	Status Status
	// Running: for a hung test, it and its subtests that were running, as
	// the timeout panic lists them ("TestA/sub (14s)").
	Running []string
	// Calls: the driver calls its goroutines were blocked in.
	Calls []Call
}

// Call is a goroutine of the dump that was in the CUDA driver.
type Call struct {
	API       string // the driver function: cuStreamSynchronize
	Goroutine int
	State     string // chan receive, locked to thread
	// Inside: the goroutine runs work of the driver's (a host function that
	// cuLaunchHostFunc queued, on the emulated driver), not a call from Go.
	Inside bool
	// Callback: the goroutine is C calling Go on a thread Go did not start,
	// no driver frame on it: on a GPU, how a host function runs (the
	// driver's thread calls the Go function it was given). API is empty.
	Callback bool
	From     string // the first frame outside the driver: the Go code that called it
	Wait     string // the innermost frame that is not the runtime's: where it waits
	InTest   string // the test function's frame on the stack, when there is one
}

// Log is what one run of a test binary printed (-test.v).
type Log struct {
	Tests []*Test // top-level tests in the order they started or ended
	// Done: the binary ran to its end (its last PASS or FAIL line).
	Done bool
	// Timeout: the duration of "panic: test timed out after D", when it struck.
	Timeout string
	// Died: the first line of a panic, fatal error or signal that ended the
	// binary otherwise.
	Died string
	// Culprit: the test whose panic ended the binary (it failed, and the
	// panic followed its FAIL line).
	Culprit string
	// Other: driver calls of goroutines that belong to no hung test.
	Other []Call
	// Dumped: the log holds a goroutine dump.
	Dumped bool

	byName map[string]*Test
}

func (l *Log) test(name string) *Test {
	t, ok := l.byName[name]
	if !ok {
		t = &Test{Name: name}
		l.byName[name] = t
		l.Tests = append(l.Tests, t)
	}
	return t
}

// Count returns how many of the log's tests have status s.
func (l *Log) Count(s Status) int {
	n := 0
	for _, t := range l.Tests {
		if t.Status == s {
			n++
		}
	}
	return n
}

var (
	resultRE    = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(`)
	eventRE     = regexp.MustCompile(`^=== (RUN|PAUSE|CONT|NAME) +(\S+)`)
	runningRE   = regexp.MustCompile(`^\t\t(\S+) \(([^)]*)\)$`)
	goroutineRE = regexp.MustCompile(`^goroutine (\d+)(?: [^\[]*)? \[([^\]]*)\]:$`)
	createdRE   = regexp.MustCompile(`^created by (\S+)(?: in goroutine (\d+))?$`)
	diedRE      = regexp.MustCompile(`^(panic: |fatal error: |SIG[A-Z]+: |unexpected fault address)`)
)

const timedOut = "panic: test timed out after "

type frame struct{ fn, loc string }

type goroutine struct {
	id, parent int
	state      string
	frames     []frame // innermost first
}

// Parse reads the output of one run of a Go test binary run with -test.v:
// the top-level tests that passed, failed or were skipped, and, when the
// binary did not run to its end, the tests that were running then (hung
// when its timeout struck or it was killed from outside, crashed when it
// died otherwise), each with the driver calls its goroutines were blocked
// in, from the goroutine dump the timeout panic prints.
func Parse(r io.Reader) (*Log, error) {
	l := &Log{byName: map[string]*Test{}}
	started := map[string]bool{}
	paused := map[string]bool{}
	var order []string
	var panicRunning []string // top-level and subtests, as listed, with durations
	var gs []*goroutine
	var g *goroutine
	inRunning := false
	lastFail := "" // the test of the last result line, when it failed
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if inRunning {
			if m := runningRE.FindStringSubmatch(line); m != nil {
				panicRunning = append(panicRunning, m[1]+" ("+m[2]+")")
				continue
			}
			if strings.TrimSpace(line) == "running tests:" {
				continue
			}
			inRunning = false
		}
		if g != nil {
			switch {
			case line == "":
				g = nil
			case strings.HasPrefix(line, "\t"):
				if n := len(g.frames); n > 0 && g.frames[n-1].loc == "" {
					g.frames[n-1].loc = strings.TrimSpace(line)
				}
			case createdRE.MatchString(line):
				m := createdRE.FindStringSubmatch(line)
				g.parent, _ = strconv.Atoi(m[2])
				g.frames = append(g.frames, frame{fn: "created by " + m[1]})
			case strings.HasPrefix(line, "..."):
			default:
				g.frames = append(g.frames, frame{fn: funcName(line)})
			}
			continue
		}
		if i := strings.Index(line, timedOut); i >= 0 && l.Timeout == "" {
			l.Timeout = strings.TrimSpace(line[i+len(timedOut):])
			inRunning = true
			continue
		}
		if m := goroutineRE.FindStringSubmatch(line); m != nil && (l.Timeout != "" || l.Died != "") {
			id, _ := strconv.Atoi(m[1])
			g = &goroutine{id: id, state: m[2]}
			gs = append(gs, g)
			continue
		}
		if m := eventRE.FindStringSubmatch(line); m != nil {
			lastFail = ""
			name := m[2]
			if strings.Contains(name, "/") {
				continue
			}
			switch m[1] {
			case "RUN":
				if !started[name] {
					started[name] = true
					order = append(order, name)
				}
			case "PAUSE":
				paused[name] = true
			case "CONT":
				paused[name] = false
			}
			continue
		}
		if m := resultRE.FindStringSubmatch(line); m != nil {
			if strings.Contains(m[2], "/") {
				continue
			}
			t := l.test(m[2])
			t.Status = map[string]Status{"PASS": Pass, "FAIL": Fail, "SKIP": Skip}[m[1]]
			lastFail = ""
			if t.Status == Fail {
				lastFail = t.Name
			}
			continue
		}
		if line == "PASS" || line == "FAIL" {
			l.Done = true
			continue
		}
		if diedRE.MatchString(line) && l.Died == "" && l.Timeout == "" {
			l.Died = line
			l.Culprit = lastFail
			continue
		}

	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if l.Timeout != "" || l.Died != "" {
		l.Done = false
	}
	if l.Done {
		return l, nil
	}

	// The binary did not run to its end: which tests were running?
	stuck := Hung
	if l.Timeout == "" && l.Died != "" {
		stuck = Crash
	}
	var running []string
	if l.Timeout != "" && len(panicRunning) > 0 {
		seen := map[string]bool{}
		for _, r := range panicRunning {
			top, _, _ := strings.Cut(r, " ")
			top, _, _ = strings.Cut(top, "/")
			if !seen[top] {
				seen[top] = true
				running = append(running, top)
			}
		}
	} else {
		for _, name := range order {
			if t, ok := l.byName[name]; (!ok || t.Status == "") && !paused[name] {
				running = append(running, name)
			}
		}
	}
	for _, name := range running {
		t := l.test(name)
		if t.Status != "" {
			continue // it ended as the binary did (a panic in the test itself: FAIL)
		}
		t.Status = stuck
		for _, r := range panicRunning {
			if r == name || strings.HasPrefix(r, name+" ") || strings.HasPrefix(r, name+"/") {
				t.Running = append(t.Running, r)
			}
		}
	}
	l.Dumped = len(gs) > 0
	l.attribute(gs)
	return l, nil
}

// funcName is a dump's function line without its arguments.
func funcName(line string) string {
	if strings.HasSuffix(line, ")") {
		if i := strings.LastIndex(line, "("); i > 0 {
			return line[:i]
		}
	}
	return line
}

// short is a function or file name without the module path.
func short(fn string) string {
	return strings.TrimPrefix(fn, "github.com/cuarray/cuarray/")
}

// pkgFunc splits "example.com/a/b.(*T).M" into "example.com/a/b" and "(*T).M".
func pkgFunc(fn string) (pkg, name string) {
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	if dot < 0 {
		return "", fn
	}
	return fn[:slash+1+dot], fn[slash+1+dot+1:]
}

// where is "fn (pkg/dir/file.go:123)" for a frame: the file named by its
// package's directory in the module, or by its last two path elements.
func where(f frame) string {
	loc, _, _ := strings.Cut(f.loc, " +0x")
	if loc == "" {
		return short(f.fn)
	}
	pkg, _ := pkgFunc(f.fn)
	file := path.Base(loc)
	if rel := short(pkg); rel != pkg && !strings.HasPrefix(f.fn, "created by") {
		file = strings.TrimSuffix(rel, "_test") + "/" + file
	} else if d := path.Base(path.Dir(loc)); d != "." && d != "/" {
		file = d + "/" + file
	}
	return short(f.fn) + " (" + file + ")"
}

// driverAPI reports whether a frame is in the CUDA driver or its Go
// binding: a cgo call of a driver function or of cuarray's C that calls
// one (pkg._Cfunc_cuXxx, pkg._Cfunc_cuarray_peek; not the emulated
// driver's own C, _Cfunc_cuemu_*), the emulated driver's export of a driver
// function (cuemu_cuXxx), or gorgonia.org/cu. api is the
// driver function's name where the frame gives it; cgo is true for the
// call from Go itself, inside for work the emulated driver runs (a closure
// within its export: a host function).
func driverAPI(fn string) (api string, cgo, inside, ok bool) {
	_, name := pkgFunc(fn)
	if rest, found := strings.CutPrefix(name, "_Cfunc_cu"); found && !strings.HasPrefix(rest, "emu_") {
		return "cu" + ident(rest), true, false, true
	}
	if i := strings.Index(fn, "cuemu_cu"); i >= 0 && upper(fn[i+len("cuemu_cu"):]) {
		rest := fn[i+len("cuemu_cu"):]
		id := ident(rest)
		return "cu" + id, false, strings.HasPrefix(rest[len(id):], ".func"), true
	}
	if strings.HasPrefix(fn, "gorgonia.org/cu.") {
		return "", false, false, true
	}
	return "", false, false, false
}

func upper(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }

func ident(s string) string {
	for i, c := range s {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return s[:i]
		}
	}
	return s
}

// quiet: frames of the runtime and the standard library's waiting, which
// say nothing of where a program waits.
func quiet(fn string) bool {
	for _, p := range []string{"runtime.", "sync.", "internal/", "created by "} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// call describes goroutine g's driver call, if it is in one.
func call(g *goroutine) (Call, bool) {
	c := Call{Goroutine: g.id, State: g.state}
	outer, cgo := -1, -1
	emuAPI, bindAPI := "", ""
	for i, f := range g.frames {
		api, isCgo, inside, ok := driverAPI(f.fn)
		if !ok {
			continue
		}
		outer = i
		switch {
		case isCgo:
			c.API, cgo = api, i
		case api != "":
			emuAPI = api
			c.Inside = inside
		default:
			_, bindAPI = pkgFunc(f.fn)
			bindAPI = "gorgonia.org/cu." + bindAPI
		}
	}
	if outer < 0 {
		return callback(g)
	}
	if cgo >= 0 {
		c.Inside = false
	} else if emuAPI != "" {
		c.API = emuAPI
	} else {
		c.API = bindAPI
	}
	for _, f := range g.frames[outer+1:] {
		if !quiet(f.fn) {
			c.From = where(f)
			break
		}
	}
	for _, f := range g.frames {
		if !quiet(f.fn) {
			c.Wait = where(f)
			break
		}
	}
	return c, true
}

// callback reports a goroutine that C started by calling an exported Go
// function on a thread of its own: locked to its thread, created by no
// goroutine, and not the main one.
func callback(g *goroutine) (Call, bool) {
	c := Call{Goroutine: g.id, State: g.state, Callback: true}
	if g.id == 1 || len(g.frames) == 0 || !strings.Contains(g.state, "locked to thread") {
		return c, false
	}
	for _, f := range g.frames {
		if strings.HasPrefix(f.fn, "created by ") || f.fn == "main.main" || strings.HasPrefix(f.fn, "testing.") {
			return c, false
		}
	}
	for _, f := range g.frames {
		if !quiet(f.fn) {
			c.Wait = where(f)
			return c, true
		}
	}
	return c, false
}

// testOf returns the test function among names whose frame is on g's
// stack ("pkg.TestX" or one of its closures "pkg.TestX.func1"), and the frame.
func testOf(g *goroutine, names map[string]bool) (string, string) {
	for _, f := range g.frames {
		if strings.HasPrefix(f.fn, "created by ") {
			continue
		}
		_, name := pkgFunc(f.fn)
		top, _, _ := strings.Cut(name, ".")
		if names[top] {
			return top, where(f)
		}
	}
	return "", ""
}

// attribute gives each driver call of the dump to the hung or crashed test
// whose goroutine made it, or made the goroutine that made it; calls no
// test's goroutine made go to the only stuck test, or to l.Other.
func (l *Log) attribute(gs []*goroutine) {
	names := map[string]bool{}
	var stuck []*Test
	for _, t := range l.Tests {
		if t.Status == Hung || t.Status == Crash {
			names[t.Name] = true
			stuck = append(stuck, t)
		}
	}
	byID := map[int]*goroutine{}
	for _, g := range gs {
		byID[g.id] = g
	}
	owner := func(g *goroutine) (string, string) {
		for depth := 0; g != nil && depth < 64; depth++ {
			if name, at := testOf(g, names); name != "" {
				return name, at
			}
			g = byID[g.parent]
		}
		return "", ""
	}
	for _, g := range gs {
		c, ok := call(g)
		if !ok {
			continue
		}
		name, at := owner(g)
		c.InTest = at
		switch {
		case name != "":
			l.byName[name].Calls = append(l.byName[name].Calls, c)
		case len(stuck) == 1:
			stuck[0].Calls = append(stuck[0].Calls, c)
		default:
			l.Other = append(l.Other, c)
		}
	}
	// The calls from Go first, then work inside the driver (host functions).
	for _, t := range stuck {
		var from, inside []Call
		for _, c := range t.Calls {
			if c.Inside || c.Callback {
				inside = append(inside, c)
			} else {
				from = append(from, c)
			}
		}
		t.Calls = append(from, inside...)
	}
}

// String describes the call on one line.
func (c Call) String() string {
	var b strings.Builder
	if c.Callback {
		fmt.Fprintf(&b, "C calling Go on a thread Go did not start (a driver callback, such as a host function) [goroutine %d, %s]", c.Goroutine, c.State)
		if c.Wait != "" {
			fmt.Fprintf(&b, ", waiting in %s", c.Wait)
		}
		return b.String()
	}
	if c.Inside {
		fmt.Fprintf(&b, "inside the driver, running work %s queued", c.API)
		if c.API == "cuLaunchHostFunc" {
			b.Reset()
			b.WriteString("a host function (cuLaunchHostFunc)")
		}
		fmt.Fprintf(&b, " [goroutine %d, %s]", c.Goroutine, c.State)
		if c.Wait != "" {
			fmt.Fprintf(&b, ", waiting in %s", c.Wait)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s [goroutine %d, %s]", c.API, c.Goroutine, c.State)
	if c.From != "" {
		fmt.Fprintf(&b, ", called from %s", c.From)
	}
	if c.InTest != "" && c.InTest != c.From {
		fmt.Fprintf(&b, ", in %s", c.InTest)
	}
	return b.String()
}
