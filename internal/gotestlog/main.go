// Command gotestlog reads what runs of one Go test binary printed (with
// -test.v), in the order they ran, and says what became of every top-level
// test: passed, failed, skipped, hung (running when the binary's
// -test.timeout struck, or when it was killed from outside) or crashed
// (running when the binary died otherwise), and, from the goroutine dump
// of a timeout panic, the CUDA driver call each hung test was blocked in.
// The GPU run's script (scripts/gpu-run.sh, .gpu/run.sh in the bundle)
// calls it to run a package again without its hung tests and without the
// tests that already ran, so that a hang costs one test, not the package.
// The GPU machine has no Go toolchain: make gpu-bundle builds it into the
// bundle.
//
//	gotestlog -sh LOG...      shell assignments: pass= fail= skip= hung= crash= (all the runs),
//	                          done= (the last run reached its end), ended= (tests that ended
//	                          the last run: hung, crashed, or whose panic did), skip_re= (the
//	                          -test.skip pattern of every test that ran or hung), stuck_re=
//	                          (the pattern of the tests that hung or crashed)
//	gotestlog -stuck LOG...   one line per hung or crashed test: STATUS<TAB>TEST<TAB>what it was in
//	gotestlog -report LOG...  what each run came to, every hung test with its calls
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

func main() {
	sh := flag.Bool("sh", false, "print shell assignments: the counts, done, ended and skip_re")
	stuck := flag.Bool("stuck", false, "print one line per hung or crashed test")
	report := flag.Bool("report", false, "print what each run came to (the default)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: gotestlog [-sh | -stuck | -report] LOG...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var runs []*Log
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gotestlog:", err)
			os.Exit(1)
		}
		l, err := Parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "gotestlog: %s: %v\n", name, err)
			os.Exit(1)
		}
		runs = append(runs, l)
	}
	switch {
	case *sh:
		writeShell(os.Stdout, runs)
	case *stuck:
		writeStuck(os.Stdout, runs)
	default:
		_ = report
		writeReport(os.Stdout, flag.Args(), runs)
	}
}

// final is every top-level test with what became of it in its last run.
func final(runs []*Log) ([]string, map[string]*Test) {
	var order []string
	last := map[string]*Test{}
	for _, l := range runs {
		for _, t := range l.Tests {
			if t.Status == "" {
				continue
			}
			if _, ok := last[t.Name]; !ok {
				order = append(order, t.Name)
			}
			last[t.Name] = t
		}
	}
	return order, last
}

// SkipPattern is the -test.skip pattern that leaves out every top-level
// test the runs ran (or hung in): "^(TestA|TestB)$", "" for none.
func SkipPattern(runs []*Log) string {
	order, _ := final(runs)
	if len(order) == 0 {
		return ""
	}
	q := make([]string, len(order))
	for i, n := range order {
		q[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// StuckPattern is the -test.skip pattern of the tests that hung or crashed
// (or whose panic ended a run): "" for none.
func StuckPattern(runs []*Log) string {
	var q []string
	for _, l := range runs {
		for _, t := range l.Tests {
			if t.Status == Hung || t.Status == Crash {
				q = append(q, regexp.QuoteMeta(t.Name))
			}
		}
		if l.Culprit != "" {
			q = append(q, regexp.QuoteMeta(l.Culprit))
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// Ended is the number of tests that ended the last run before its end: it
// is worth running again without them.
func Ended(l *Log) int {
	n := l.Count(Hung) + l.Count(Crash)
	if l.Culprit != "" {
		n++
	}
	return n
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeShell(w io.Writer, runs []*Log) {
	order, last := final(runs)
	n := map[Status]int{}
	for _, name := range order {
		n[last[name].Status]++
	}
	l := runs[len(runs)-1]
	done := 0
	if l.Done {
		done = 1
	}
	fmt.Fprintf(w, "pass=%d\nfail=%d\nskip=%d\nhung=%d\ncrash=%d\ndone=%d\nended=%d\nskip_re=%s\nstuck_re=%s\n",
		n[Pass], n[Fail], n[Skip], n[Hung], n[Crash], done, Ended(l), quote(SkipPattern(runs)), quote(StuckPattern(runs)))
}

// noCall says why a stuck test has no call.
func noCall(l *Log) string {
	if l.Dumped {
		return "no driver call in the goroutine dump"
	}
	return "no goroutine dump (killed before it printed one)"
}

// summary is the stuck test's calls on one line: the first from Go, or
// the first of any.
func (t *Test) summary(l *Log) string {
	if len(t.Calls) == 0 {
		return noCall(l)
	}
	s := t.Calls[0].String()
	if len(t.Calls) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(t.Calls)-1)
	}
	return s
}

func writeStuck(w io.Writer, runs []*Log) {
	for _, l := range runs {
		for _, t := range l.Tests {
			if t.Status == Hung || t.Status == Crash {
				fmt.Fprintf(w, "%s\t%s\t%s\n", t.Status, t.Name, t.summary(l))
			}
		}
		if l.Culprit != "" {
			fmt.Fprintf(w, "crash\t%s\t%s\n", l.Culprit, l.Died)
		}
	}
}

func writeReport(w io.Writer, names []string, runs []*Log) {
	for i, l := range runs {
		ran := len(l.Tests) - l.Count(Hung) - l.Count(Crash)
		fmt.Fprintf(w, "run %d (%s): ", i+1, names[i])
		switch {
		case l.Done:
			fmt.Fprintf(w, "ran to its end: %d passed, %d failed, %d skipped\n", l.Count(Pass), l.Count(Fail), l.Count(Skip))
		case l.Timeout != "":
			fmt.Fprintf(w, "the binary's timeout (%s) struck after %d tests had ended (%d passed, %d failed, %d skipped)\n",
				l.Timeout, ran, l.Count(Pass), l.Count(Fail), l.Count(Skip))
		case l.Died != "":
			fmt.Fprintf(w, "the binary died after %d tests had ended: %s\n", ran, l.Died)
		default:
			fmt.Fprintf(w, "cut off from outside (no timeout panic, no end) after %d tests had ended\n", ran)
		}
		if l.Culprit != "" {
			fmt.Fprintf(w, "  crashed: %s (its panic ended the binary)\n", l.Culprit)
		}
		for _, t := range l.Tests {
			if t.Status != Hung && t.Status != Crash {
				continue
			}
			word := "hung"
			if t.Status == Crash {
				word = "running when it died"
			}
			fmt.Fprintf(w, "  %s: %s\n", word, t.Name)
			if len(t.Running) > 0 {
				fmt.Fprintf(w, "    running: %s\n", strings.Join(t.Running, ", "))
			}
			if len(t.Calls) == 0 {
				fmt.Fprintf(w, "    %s\n", noCall(l))
			}
			for j, c := range t.Calls {
				word := "blocked in"
				if j > 0 {
					word = "also"
				}
				fmt.Fprintf(w, "    %s %s\n", word, c)
			}
		}
		for _, c := range l.Other {
			fmt.Fprintf(w, "  in the driver, no test's: %s\n", c)
		}
	}
}
