package testdev

import (
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cuarray/cuarray/device/driver"
)

// holdPoll is how often a held stream checks whether its test has failed.
const holdPoll = 5 * time.Millisecond

// HoldDeadlineEnv names the environment variable that sets how long Hold
// holds a stream before it fails the test (a Go duration, "90s").
const HoldDeadlineEnv = "CUARRAY_HOLD_DEADLINE"

// defaultHoldDeadline is how long a test may hold a stream: the tests
// that hold one let it go within a second or two, even under -race on a
// loaded machine with latency; a minute means a call waited on the held
// stream.
const defaultHoldDeadline = time.Minute

// holdDeadline is the deadline that HoldDeadlineEnv sets, else the default.
func holdDeadline(t testing.TB) time.Duration {
	v := os.Getenv(HoldDeadlineEnv)
	if v == "" {
		return defaultHoldDeadline
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive Go duration such as 90s", HoldDeadlineEnv, v)
	}
	return d
}

// Hold holds stream s at this point until the returned resume is called,
// the test fails, or the test ends: work queued on s afterwards waits, as
// behind a long kernel. A test that fails while it holds a stream (a
// require, a t.Fatal) lets it go at once, so the deferred frees and
// closes that wait for s end instead of hanging until the test binary's
// timeout. A stream held past its deadline (a minute, or
// CUARRAY_HOLD_DEADLINE) fails the test, with the stacks of the goroutines
// in cuarray's code, and is let go: a call that waits on the held stream
// (a pageable copy on a GPU, a synchronize) turns from a hang into a
// failure that names it. resume may be called more than once. sim's
// streams and the cuda backend's can be held (driver.Holder); on a device
// whose streams cannot, the test skips. A stream that fails before the
// hold is reached (driver.FailingHolder: on a GPU a host function is not
// called after an error in its context) fails the test with its error at
// once, instead of at the deadline.
func Hold(t testing.TB, s driver.Stream) (resume func()) {
	t.Helper()
	if h, ok := s.(driver.FailingHolder); ok {
		_, failed, let, err := h.HoldFailing()
		if err != nil {
			t.Fatalf("hold a stream: %v", err)
		}
		return watch(t, let, failed)
	}
	h, ok := s.(driver.Holder)
	if !ok {
		t.Skipf("the stream (%T) cannot be held at a point", s)
	}
	let, err := h.Hold()
	if err != nil {
		t.Fatalf("hold a stream: %v", err)
	}
	return watch(t, let, nil)
}

// HoldReached is Hold, and returns only once the hold holds s (its earlier
// work done, the cuda backend's host function running; within
// PeekDeadline, else the test fails): a test that checks that a call does
// not wait for a host function, as a copy into pageable memory does on a
// GPU, needs one running. On a device whose streams cannot tell
// (driver.ReachedHolder), it is Hold.
func HoldReached(t testing.TB, s driver.Stream) (resume func()) {
	t.Helper()
	var (
		reached <-chan struct{}
		failed  <-chan error
		let     func()
		err     error
	)
	switch h := s.(type) {
	case driver.FailingHolder:
		reached, failed, let, err = h.HoldFailing()
	case driver.ReachedHolder:
		reached, let, err = h.HoldReached()
	default:
		return Hold(t, s)
	}
	if err != nil {
		t.Fatalf("hold a stream: %v", err)
	}
	resume = watch(t, let, nil)
	select {
	case <-reached:
	case err := <-failed:
		resume()
		t.Fatalf("a stream held: the stream failed before the hold was reached: %v", err)
	case <-time.After(PeekDeadline):
		resume()
		t.Fatalf("a stream held: the hold was not reached in %v", PeekDeadline)
	}
	return resume
}

// watch returns resume for a hold that let lets go: it lets go once, when
// called, when the test fails, or when it ends. An error from failed (nil:
// none) fails the test and lets go.
func watch(t testing.TB, let func(), failed <-chan error) (resume func()) {
	var once sync.Once
	released := make(chan struct{})
	resume = func() {
		once.Do(func() {
			close(released)
			let()
		})
	}
	limit := holdDeadline(t)
	deadline := time.NewTimer(limit)
	go func() {
		tick := time.NewTicker(holdPoll)
		defer tick.Stop()
		defer deadline.Stop()
		for {
			select {
			case <-released:
				return
			case err := <-failed:
				t.Errorf("a stream held: the stream failed before the hold was reached: %v", err)
				resume()
				return
			case <-deadline.C:
				t.Errorf("a stream held for longer than %v (%s): a call waited on it, as it would hang on a GPU; the goroutines in cuarray's code:\n%s",
					limit, HoldDeadlineEnv, cuarrayStacks())
				resume()
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

// cuarrayStacks returns the stacks of the goroutines that are in
// cuarray's packages, at most 32 KiB of them: where a hung call waits.
func cuarrayStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var kept []string
	size := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "github.com/cuarray/cuarray/") || strings.Contains(g, "testdev.Hold.func") {
			continue
		}
		if size += len(g); size > 32<<10 {
			kept = append(kept, "…")
			break
		}
		kept = append(kept, g)
	}
	return strings.Join(kept, "\n\n")
}
