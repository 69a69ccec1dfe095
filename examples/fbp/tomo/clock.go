package tomo

import "time"

// clock is told when a run's clock starts (true) and stops (false), the
// bounds of Result.Seconds: the package's tests count what the driver and
// the kernel do in between.
var clock = func(running bool) {}

// timed runs f with the clock running and sets res.Seconds to its time.
func timed(res *Result, f func() error) error {
	clock(true)
	start := time.Now()
	err := f()
	res.Seconds = time.Since(start).Seconds()
	clock(false)
	return err
}
