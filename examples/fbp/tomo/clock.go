package tomo

import "time"

// clock is told when the clock of the run of res starts (true) and stops
// (false), the bounds of res.Seconds: the package's tests count what the
// driver and the kernel do in between.
var clock = func(running bool, res *Result) {}

// timed runs f with the clock running and sets res.Seconds to its time.
func timed(res *Result, f func() error) error {
	clock(true, res)
	start := time.Now()
	err := f()
	res.Seconds = time.Since(start).Seconds()
	clock(false, res)
	return err
}
