//go:build !linux

package tomo_test

// minorFaults reports false: the minor fault count is read from Linux's
// getrusage (ru_minflt) only.
func minorFaults() (int64, bool) { return 0, false }

// residentPages reports false: the pages' residency is read from Linux's
// mincore only.
func residentPages([]float32) (resident, pages int, ok bool) { return 0, 0, false }
