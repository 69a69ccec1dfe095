//go:build cuda && cudaemu && linux

package conformance

import "github.com/cuarray/cuarray/device/cuda/emulated"

// failedCalls returns the driver calls that failed while f ran: the
// emulated driver keeps them, as compute-sanitizer reports them on a GPU.
func failedCalls(f func()) ([]string, bool) {
	emulated.ResetFailures()
	f()
	var out []string
	for _, x := range emulated.Failures() {
		out = append(out, x.String())
	}
	return out, true
}
