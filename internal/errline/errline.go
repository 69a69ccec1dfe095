// Package errline formats an error as the one line a command prints on
// failure:
//
//	fmt.Fprintf(stderr, "cuarray %s: %s\n", cmd, errline.Of(err))
package errline

import (
	"slices"
	"strings"

	"github.com/cuarray/cuarray/device"
)

// Of returns err's message on one line. Errors joined with errors.Join
// print one per line: those lines are joined with "; ". After a sticky
// device fault (device.ErrContextFailed: an illegal address on a GPU)
// every later call of the device fails with the same fault, so the frees,
// closes and synchronizations of a command's cleanup each add a line that
// repeats it: only the first line that names the fault is kept.
func Of(err error) string {
	if err == nil {
		return ""
	}
	faults := faultTexts(err)
	var kept []string
	seen := false
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if slices.ContainsFunc(faults, func(f string) bool { return strings.Contains(l, f) }) {
			if seen {
				continue
			}
			seen = true
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "; ")
}

// faultTexts returns the texts that name the fault in err's lines:
// ErrContextFailed's own, and that of each error in err's tree that wraps
// it directly. A backend's error may not print the kind it wraps: the
// cuda backend's DriverError prints the driver's "CUDA_ERROR_ILLEGAL_ADDRESS
// (700): an illegal memory access was encountered" and unwraps to
// ErrContextFailed.
func faultTexts(err error) []string {
	texts := []string{device.ErrContextFailed.Error()}
	var walk func(e error)
	walk = func(e error) {
		var children []error
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			children = []error{u.Unwrap()}
		case interface{ Unwrap() []error }:
			children = u.Unwrap()
		}
		for _, c := range children {
			if c == nil {
				continue
			}
			if c == device.ErrContextFailed {
				if t := e.Error(); t != "" && !strings.Contains(t, "\n") {
					texts = append(texts, t)
				}
				continue
			}
			walk(c)
		}
	}
	walk(err)
	return texts
}
