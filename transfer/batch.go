package transfer

import "github.com/cuarray/cuarray/device/driver"

// batched runs f with s, or with the view of s that a driver.Batcher gives
// while f runs, so that the copies and event records f queues on it share
// one switch of the thread's context: a small copy's cost is its driver
// calls. f uses the stream it is given on its own goroutine only.
func batched(s driver.Stream, f func(driver.Stream) error) error {
	if b, ok := s.(driver.Batcher); ok {
		return b.Batch(f)
	}
	return f(s)
}
