package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cuarray/cuarray/plan"
)

// parseMethods parses -method: "all" (every method of reg), or one name
// or several, comma-separated, each registered in reg, none twice.
func parseMethods(s string, reg *plan.Registry) ([]plan.Method, error) {
	names := strings.Split(s, ",")
	if strings.TrimSpace(s) == "all" {
		names = reg.Names()
	}
	var ms []plan.Method
	var seen []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("method %q: an empty name; want NAME, NAME,NAME or all", s)
		}
		if slices.Contains(seen, n) {
			return nil, fmt.Errorf("method %q: %q twice", s, n)
		}
		m, err := reg.Lookup(n)
		if err != nil {
			return nil, err
		}
		seen = append(seen, n)
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("method %q: no methods are registered", s)
	}
	return ms, nil
}

// planMany plans the job for each method in turn and prints a line for
// each (an array of reports with -json); a method that cannot plan it
// gets its error in its line. It fails only when none could. Once
// planOne's calls have taken planProgressAfter, each method is announced
// on progress (nil: none).
func planMany(methods []plan.Method, planOne func(plan.Method) (plan.Plan, error), devName string, limit int64, asJSON bool, stdout, progress io.Writer) error {
	start := time.Now()
	shown := false
	reports := make([]planReport, 0, len(methods))
	var errs []error
	for i, m := range methods {
		if progress != nil && time.Since(start) >= planProgressAfter {
			fmt.Fprintf(progress, "cuarray plan: %d of %d methods planned in %.1fs, next %s\n", i, len(methods), time.Since(start).Seconds(), m.Name())
			shown = true
		}
		p, err := planOne(m)
		r := planReport{Device: devName, Plan: p, Limit: limit}
		r.Method = m.Name()
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, err)
		}
		reports = append(reports, r)
	}
	if shown {
		fmt.Fprintf(progress, "cuarray plan: %d methods planned in %.1fs\n", len(methods), time.Since(start).Seconds())
	}
	if asJSON {
		if err := writeJSON(stdout, reports); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			if r.Error != "" {
				fmt.Fprintf(stdout, "%s: cannot plan: %s\n", r.Method, r.Error)
				continue
			}
			fmt.Fprintf(stdout, "%s on %s\n", r.Explain(), r.Device)
		}
	}
	if len(errs) < len(methods) {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	for _, err := range errs {
		if !badInput(err) {
			return fmt.Errorf("no method could plan the job: %s: %w", strings.Join(msgs, "; "), errors.Join(errs...))
		}
	}
	return usageError{"no method takes this job: " + strings.Join(msgs, "; ")}
}
