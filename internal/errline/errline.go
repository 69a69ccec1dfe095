// Package errline formats an error as the one line a command prints on
// failure:
//
//	fmt.Fprintf(stderr, "cuarray %s: %s\n", cmd, errline.Of(err))
package errline

import (
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
	fault := device.ErrContextFailed.Error()
	var kept []string
	seen := false
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.Contains(l, fault) {
			if seen {
				continue
			}
			seen = true
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "; ")
}
