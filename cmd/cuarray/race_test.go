//go:build race

package main

// raceEnabled: the race detector makes each bench run about ten times
// slower, so the fault sweeps of bench step over positions (faultStride).
const raceEnabled = true
