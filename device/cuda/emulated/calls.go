//go:build cuda && cudaemu && linux

package emulated

import (
	"maps"
	"sync"
)

// The driver calls made so far, by the driver function's name, as a
// profiler's API trace counts them: what a call of cuarray's costs in
// driver calls, which a test can hold to a budget.
var (
	callsMu sync.Mutex
	calls   = make(map[string]int64)
)

// countCall counts one call of the driver function call.
func countCall(call string) {
	callsMu.Lock()
	calls[call]++
	callsMu.Unlock()
}

// Calls returns how many times each driver function has been called in
// this process so far (those that answer through result: every function
// cuarray calls).
func Calls() map[string]int64 {
	callsMu.Lock()
	defer callsMu.Unlock()
	return maps.Clone(calls)
}
