//go:build race

package tomo_test

// raceEnabled reports whether the race detector instruments this test binary.
const raceEnabled = true
