package tomo

// OnClock makes f the runs' clock hook (told true with the run's Result
// when the clock starts, false when it stops) until the returned restore
// is called. Tests that use it do not run in parallel.
func OnClock(f func(running bool, res *Result)) (restore func()) {
	old := clock
	clock = f
	return func() { clock = old }
}
