// Command benchtable turns the output of scripts/bench-sim.sh (make bench)
// into build/bench-sim.json and a markdown table, so that docs/perf.md's
// table of sim figures is generated from one run, never copied by hand.
//
//	go run ./internal/benchtable -in build/bench-sim.txt -commit C -json build/bench-sim.json -md build/bench-sim.md
//	go run ./internal/benchtable -splice docs/perf.md -md build/bench-sim.md   # make bench-doc
//
// With -splice it puts the markdown file between the document's
// "<!-- bench-sim: begin" and "<!-- bench-sim: end -->" lines instead.
//
// The input is a sequence of steps. Each starts with a line
// "== STEP: COMMAND" and ends with "== rc N"; between them is what the
// command printed. A Go benchmark line (BenchmarkName-P  N  V unit  V unit
// ...) becomes figures: for each benchmark and unit the median, the lowest
// and the highest value over its repetitions (-count). A line that is a
// JSON object (the peer scripts print one) is kept as it is, and so is a
// test's log line (name_test.go:N: text), where a test prints its figures.
// A step with none of these (a script with its own format) keeps its last
// few lines.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Figure is one benchmark's values for one unit over its repetitions.
type Figure struct {
	Benchmark string  `json:"benchmark"`
	Unit      string  `json:"unit"`
	N         int     `json:"n"`
	Median    float64 `json:"median"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
}

// Step is one command of the run and what it measured.
type Step struct {
	Name    string           `json:"name"`
	Command string           `json:"command"`
	RC      int              `json:"rc"`
	Figures []Figure         `json:"figures,omitempty"`
	JSON    []map[string]any `json:"json,omitempty"`
	Log     []string         `json:"log,omitempty"`
}

// Report is a whole run.
type Report struct {
	Commit string `json:"commit"`
	Date   string `json:"date"`
	Steps  []Step `json:"steps"`
}

var (
	stepLine  = regexp.MustCompile(`^== ([\w.-]+): (.+)$`)
	rcLine    = regexp.MustCompile(`^== rc (-?\d+)$`)
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)
	logLine   = regexp.MustCompile(`^\s+\w+_test\.go:\d+: (.+)$`)
)

// tailLines is how many of its last lines a step with no figures keeps.
const tailLines = 4

// errFormat is input that is not the bench script's output.
var errFormat = errors.New("benchtable: malformed input")

// Parse reads the bench script's output.
func Parse(r io.Reader) ([]Step, error) {
	var steps []Step
	var cur *Step
	var tail []string // the step's last output lines, for a step with no other figures
	values := map[[2]string][]float64{}
	var order [][2]string
	finish := func() {
		for _, k := range order {
			v := values[k]
			slices.Sort(v)
			med := v[len(v)/2]
			if len(v)%2 == 0 {
				med = (v[len(v)/2-1] + v[len(v)/2]) / 2
			}
			cur.Figures = append(cur.Figures, Figure{k[0], k[1], len(v), med, v[0], v[len(v)-1]})
		}
		if len(cur.Figures) == 0 && len(cur.JSON) == 0 && len(cur.Log) == 0 {
			cur.Log = tail // a script's own lines, as it printed them
		}
		steps = append(steps, *cur)
		cur, values, order, tail = nil, map[[2]string][]float64{}, nil, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := stepLine.FindStringSubmatch(line); m != nil && !rcLine.MatchString(line) {
			if cur != nil {
				return nil, fmt.Errorf("%w: line %d: step %q starts before step %q has its rc line", errFormat, n, m[1], cur.Name)
			}
			cur = &Step{Name: m[1], Command: m[2]}
			continue
		}
		if m := rcLine.FindStringSubmatch(line); m != nil {
			if cur == nil {
				return nil, fmt.Errorf("%w: line %d: an rc line outside a step", errFormat, n)
			}
			cur.RC, _ = strconv.Atoi(m[1])
			finish()
			continue
		}
		if cur == nil {
			continue // what the script prints between steps
		}
		if t := strings.TrimSpace(line); t != "" {
			if tail = append(tail, t); len(tail) > tailLines {
				tail = tail[1:]
			}
		}
		if m := benchLine.FindStringSubmatch(line); m != nil {
			f := strings.Fields(m[2])
			for i := 0; i+1 < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					break
				}
				k := [2]string{strings.TrimPrefix(m[1], "Benchmark"), f[i+1]}
				if _, ok := values[k]; !ok {
					order = append(order, k)
				}
				values[k] = append(values[k], v)
			}
			continue
		}
		if m := logLine.FindStringSubmatch(line); m != nil {
			cur.Log = append(cur.Log, m[1]) // a test's t.Log: the figures a test prints
			continue
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			var obj map[string]any
			if json.Unmarshal([]byte(t), &obj) == nil {
				cur.JSON = append(cur.JSON, obj)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("benchtable: read: %w", err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%w: step %q has no rc line", errFormat, cur.Name)
	}
	return steps, nil
}

// skipUnits are the units the table leaves out (they are in the JSON).
var skipUnits = map[string]bool{"B/op": true, "allocs/op": true}

// Markdown writes the run as one table per step, each under its command.
func Markdown(w io.Writer, rep Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Generated by `make bench` (scripts/bench-sim.sh, internal/benchtable) at commit %s, %s.\n", rep.Commit, rep.Date)
	for _, s := range rep.Steps {
		status := ""
		if s.RC != 0 {
			status = fmt.Sprintf(" — exit status %d", s.RC)
		}
		fmt.Fprintf(&b, "\n**%s**%s: `%s`\n\n", s.Name, status, s.Command)
		rows := 0
		for _, f := range s.Figures {
			if skipUnits[f.Unit] {
				continue
			}
			if rows == 0 {
				b.WriteString("| benchmark | unit | median | range | n |\n|---|---|---|---|---|\n")
			}
			rows++
			fmt.Fprintf(&b, "| %s | %s | %s | %s–%s | %d |\n", f.Benchmark, f.Unit, num(f.Median), num(f.Min), num(f.Max), f.N)
		}
		for _, j := range s.JSON {
			out, err := json.Marshal(j)
			if err != nil {
				return fmt.Errorf("benchtable: %w", err)
			}
			fmt.Fprintf(&b, "\n    %s\n", out)
		}
		for _, l := range s.Log {
			fmt.Fprintf(&b, "\n    %s\n", l)
		}
		if rows == 0 && len(s.JSON) == 0 && len(s.Log) == 0 {
			b.WriteString("(no figures: a test or a step that checks, see its exit status)\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num prints a figure with about four significant digits.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

func main() {
	in := flag.String("in", "build/bench-sim.txt", "the bench script's output")
	commit := flag.String("commit", "", "the commit measured")
	date := flag.String("date", "", "when (UTC)")
	jsonOut := flag.String("json", "build/bench-sim.json", "JSON output")
	mdOut := flag.String("md", "build/bench-sim.md", "markdown output (with -splice: input)")
	splice := flag.String("splice", "", "a document whose generated section to replace with the markdown file")
	flag.Parse()
	var err error
	if *splice != "" {
		err = spliceFile(*splice, *mdOut)
	} else {
		err = run(*in, *commit, *date, *jsonOut, *mdOut)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(in, commit, date, jsonOut, mdOut string) error {
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("benchtable: %w", err)
	}
	defer f.Close()
	steps, err := Parse(f)
	if err != nil {
		return err
	}
	rep := Report{Commit: commit, Date: date, Steps: steps}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("benchtable: %w", err)
	}
	if err := os.WriteFile(jsonOut, append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("benchtable: %w", err)
	}
	md, err := os.Create(mdOut)
	if err != nil {
		return fmt.Errorf("benchtable: %w", err)
	}
	if err := Markdown(md, rep); err != nil {
		md.Close()
		return err
	}
	return md.Close()
}

const (
	beginMark = "<!-- bench-sim: begin"
	endMark   = "<!-- bench-sim: end -->"
)

// Splice returns doc with the lines between its begin and end markers
// replaced by md.
func Splice(doc, md string) (string, error) {
	b := strings.Index(doc, beginMark)
	if b < 0 {
		return "", fmt.Errorf("%w: no %q line", errFormat, beginMark)
	}
	bodyStart := strings.Index(doc[b:], "\n")
	if bodyStart < 0 {
		return "", fmt.Errorf("%w: nothing after %q", errFormat, beginMark)
	}
	bodyStart += b + 1
	e := strings.Index(doc[bodyStart:], endMark)
	if e < 0 {
		return "", fmt.Errorf("%w: no %q line after the begin line", errFormat, endMark)
	}
	return doc[:bodyStart] + strings.TrimRight(md, "\n") + "\n" + doc[bodyStart+e:], nil
}

func spliceFile(docPath, mdPath string) error {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		return fmt.Errorf("benchtable: %w", err)
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		return fmt.Errorf("benchtable: %w (run make bench first)", err)
	}
	out, err := Splice(string(doc), string(md))
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	return os.WriteFile(docPath, []byte(out), 0o644)
}
