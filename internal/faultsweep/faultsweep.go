// Package faultsweep runs a test's workflow on a sim device with a sticky
// fault (sim's fail-fault: the Nth copy, memset or kernel faults as an
// illegal address does on a GPU, and every later call fails with
// device.ErrContextFailed) at every position: N = 1, 2, ... until the
// workflow runs with no fault, with and without latency. For every N it
// checks that no call hangs or panics, that a failed call's error wraps
// ErrContextFailed, and that closing everything, then the device, leaves
// the ledger at zero and no goroutine behind. Tests only.
package faultsweep

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
)

// Deadline bounds every run of a workflow and every Close.
const Deadline = 10 * time.Second

// Run is one run of a workflow with the fault at position N.
type Run struct {
	T       *testing.T
	Dev     *sim.Device
	N       int64
	closers []closer
}

type closer struct {
	name  string
	close func() error
}

// OK reports whether err is nil; else it checks that err is the fault's.
func (r *Run) OK(err error, what string) bool {
	if err == nil {
		return true
	}
	if r.Dev.Fault() == nil {
		r.T.Errorf("fault at %d: %s failed with no fault: %v", r.N, what, err)
		return false
	}
	if !errors.Is(err, device.ErrContextFailed) {
		r.T.Errorf("fault at %d: %s: want an error wrapping ErrContextFailed, got %v", r.N, what, err)
	}
	return false
}

// Call runs a synchronous call, which must return nil only when its work
// is done: one during which the device faulted must fail. It reports
// whether the call returned nil.
func (r *Run) Call(what string, f func() error) bool {
	before := r.Dev.Fault()
	err := f()
	if err == nil && before == nil && r.Dev.Fault() != nil {
		r.Fail("%s returned nil, and the device faulted during it", what)
	}
	return r.OK(err, what)
}

// Fail records an error the workflow found.
func (r *Run) Fail(format string, args ...any) {
	r.T.Errorf("fault at %d: %s", r.N, fmt.Sprintf(format, args...))
}

// CloseLater registers close to run, in reverse order, after the workflow.
func (r *Run) CloseLater(name string, close func() error) {
	r.closers = append(r.closers, closer{name, close})
}

// Within runs f, failing the test with every goroutine's stack when it
// does not return within Deadline.
func Within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(Deadline):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("%s did not return within %v; goroutines:\n%s", what, Deadline, buf.String())
	}
}

// Sweep runs workflow with the fault at every position, with latency 0
// and 1 ms, on a sim device of memory bytes, until a run completes with
// no fault.
func Sweep(t *testing.T, memory int64, workflow func(r *Run)) {
	for _, latency := range []time.Duration{0, time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			for n := int64(1); ; n++ {
				require.Less(t, n, int64(500), "the workflow still faults at position %d", n)
				if !once(t, n, latency, memory, workflow) || t.Failed() {
					t.Logf("swept %d positions", n)
					return
				}
			}
		})
	}
}

// once runs workflow with the fault at position n and reports whether the
// device faulted.
func once(t *testing.T, n int64, latency time.Duration, memory int64, workflow func(r *Run)) bool {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	dev, err := sim.New(sim.Config{Memory: memory, Latency: latency, FailFault: n})
	require.NoError(t, err)
	r := &Run{T: t, Dev: dev, N: n}
	faulted := false
	Within(t, fmt.Sprintf("the workflow with the fault at %d", n), func() {
		workflow(r)
		for i := len(r.closers) - 1; i >= 0; i-- {
			c := r.closers[i]
			if err := c.close(); err != nil && (dev.Fault() == nil || !errors.Is(err, device.ErrContextFailed)) {
				t.Errorf("fault at %d: %s: %v", n, c.name, err)
			}
		}
		faulted = dev.Fault() != nil
	})
	Within(t, "the device's Close", func() { assert.NoError(t, dev.Close()) })
	snap := dev.Ledger().Snapshot()
	for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered} {
		assert.Zero(t, snap.Kinds[k].Current, "fault at %d: %v bytes after the device's Close", n, k)
	}
	Settled(t, goroutines)
	return faulted
}

// Settled waits, up to 5 s, until no more goroutines run than before, and
// fails the test if more still do. It polls in a plain loop:
// assert.Eventually runs goroutines of its own.
func Settled(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left running")
}
