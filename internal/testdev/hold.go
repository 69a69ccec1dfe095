package testdev

import (
	"sync"
	"testing"
	"time"

	"github.com/cuarray/cuarray/device/driver"
)

// holdPoll is how often a held stream checks whether its test has failed.
const holdPoll = 5 * time.Millisecond

// Hold holds stream s at this point until the returned resume is called,
// the test fails, or the test ends: work queued on s afterwards waits, as
// behind a long kernel. A test that fails while it holds a stream (a
// require, a t.Fatal) lets it go at once, so the deferred frees and
// closes that wait for s end instead of hanging until the test binary's
// timeout. resume may be called more than once. sim's streams and the
// cuda backend's can be held (driver.Holder); on a device whose streams
// cannot, the test skips.
func Hold(t testing.TB, s driver.Stream) (resume func()) {
	t.Helper()
	h, ok := s.(driver.Holder)
	if !ok {
		t.Skipf("the stream (%T) cannot be held at a point", s)
	}
	let, err := h.Hold()
	if err != nil {
		t.Fatalf("hold a stream: %v", err)
	}
	return watch(t, let)
}

// HoldReached is Hold, and returns only once the hold holds s (its earlier
// work done, the cuda backend's host function running; within
// PeekDeadline, else the test fails): a test that checks that a call does
// not wait for a host function, as a copy into pageable memory does on a
// GPU, needs one running. On a device whose streams cannot tell
// (driver.ReachedHolder), it is Hold.
func HoldReached(t testing.TB, s driver.Stream) (resume func()) {
	t.Helper()
	h, ok := s.(driver.ReachedHolder)
	if !ok {
		return Hold(t, s)
	}
	reached, let, err := h.HoldReached()
	if err != nil {
		t.Fatalf("hold a stream: %v", err)
	}
	resume = watch(t, let)
	select {
	case <-reached:
	case <-time.After(PeekDeadline):
		resume()
		t.Fatalf("a stream held: the hold was not reached in %v", PeekDeadline)
	}
	return resume
}

// watch returns resume for a hold that let lets go: it lets go once, when
// called, when the test fails, or when it ends.
func watch(t testing.TB, let func()) (resume func()) {
	var once sync.Once
	released := make(chan struct{})
	resume = func() {
		once.Do(func() {
			close(released)
			let()
		})
	}
	go func() {
		tick := time.NewTicker(holdPoll)
		defer tick.Stop()
		for {
			select {
			case <-released:
				return
			case <-tick.C:
				if t.Failed() {
					resume()
					return
				}
			}
		}
	}()
	t.Cleanup(resume)
	return resume
}
