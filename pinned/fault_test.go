package pinned_test

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
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
)

// The sticky-fault sweeps: a workflow runs on a sim device whose Nth copy,
// memset or kernel faults as an illegal address does on a GPU (every later
// call fails with ErrContextFailed), for N = 1, 2, ... until it runs with
// no fault, with and without latency. For every N: no call hangs or
// panics, a call that returns nil did its work, a failed call's error
// wraps ErrContextFailed, and closing everything, then the device, leaves
// the ledger at zero and no goroutine behind.

// faultDeadline bounds every run of a workflow and every Close.
const faultDeadline = 10 * time.Second

// faultRun is one run of a workflow with the fault at position n.
type faultRun struct {
	t       *testing.T
	dev     *sim.Device
	n       int64
	closers []faultCloser
}

type faultCloser struct {
	name  string
	close func() error
}

// ok reports whether err is nil; else it checks that err is the fault's.
func (r *faultRun) ok(err error, what string) bool {
	if err == nil {
		return true
	}
	if r.dev.Fault() == nil {
		r.t.Errorf("fault at %d: %s failed with no fault: %v", r.n, what, err)
		return false
	}
	if !errors.Is(err, device.ErrContextFailed) {
		r.t.Errorf("fault at %d: %s: want an error wrapping ErrContextFailed, got %v", r.n, what, err)
	}
	return false
}

// fail records an error the workflow found.
func (r *faultRun) fail(format string, args ...any) {
	r.t.Errorf("fault at %d: %s", r.n, fmt.Sprintf(format, args...))
}

// closeLater registers close to run, in reverse order, after the workflow.
func (r *faultRun) closeLater(name string, close func() error) {
	r.closers = append(r.closers, faultCloser{name, close})
}

// within runs f, failing the test with every goroutine's stack when it
// does not return within faultDeadline.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(faultDeadline):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("%s did not return within %v; goroutines:\n%s", what, faultDeadline, buf.String())
	}
}

// sweepFault runs workflow with the fault at every position, with latency
// 0 and 1 ms, until a run completes with no fault.
func sweepFault(t *testing.T, memory int64, workflow func(r *faultRun)) {
	for _, latency := range []time.Duration{0, time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			for n := int64(1); ; n++ {
				require.Less(t, n, int64(500), "the workflow still faults at position %d", n)
				if !runFault(t, n, latency, memory, workflow) || t.Failed() {
					t.Logf("swept %d positions", n)
					return
				}
			}
		})
	}
}

// runFault runs workflow once with the fault at position n and reports
// whether the device faulted.
func runFault(t *testing.T, n int64, latency time.Duration, memory int64, workflow func(r *faultRun)) bool {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	dev, err := sim.New(sim.Config{Memory: memory, Latency: latency, FailFault: n})
	require.NoError(t, err)
	r := &faultRun{t: t, dev: dev, n: n}
	faulted := false
	within(t, fmt.Sprintf("the workflow with the fault at %d", n), func() {
		workflow(r)
		for i := len(r.closers) - 1; i >= 0; i-- {
			c := r.closers[i]
			if err := c.close(); err != nil && (dev.Fault() == nil || !errors.Is(err, device.ErrContextFailed)) {
				t.Errorf("fault at %d: %s: %v", n, c.name, err)
			}
		}
		faulted = dev.Fault() != nil
	})
	within(t, "the device's Close", func() { assert.NoError(t, dev.Close()) })
	snap := dev.Ledger().Snapshot()
	for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered} {
		assert.Zero(t, snap.Kinds[k].Current, "fault at %d: %v bytes after the device's Close", n, k)
	}
	deadline := time.Now().Add(5 * time.Second) // a plain loop: assert.Eventually starts goroutines
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "fault at %d: goroutines left running", n)
	return faulted
}

// eventWork is an async copy as package transfer's Op is one: an event
// recorded behind it on its stream. After a fault its query fails, and
// the copy never completes.
type eventWork struct{ ev driver.Event }

func (w eventWork) Done() (bool, error) { return w.ev.Query() }
func (w eventWork) Wait() error         { return w.ev.Synchronize() }

// guarded queues a copy of buf's bytes to dst on s and guards buf with it.
// It returns the work, nil when the copy could not be queued.
func guarded(r *faultRun, s driver.Stream, buf *pinned.Buffer, dst devarray.Ptr, what string) *eventWork {
	if !r.ok(s.CopyHtoDAsync(dst, buf.Bytes()), what+": CopyHtoDAsync") {
		return nil
	}
	ev, err := r.dev.NewEvent()
	if !r.ok(err, what+": NewEvent") {
		return nil
	}
	r.closeLater(what+": event Close", ev.Close)
	if !r.ok(s.Record(ev), what+": Record") {
		return nil
	}
	w := &eventWork{ev}
	if err := buf.Guard(w); err != nil {
		r.fail("%s: Guard: %v", what, err)
		return nil
	}
	return w
}

// checkDevice checks that the n bytes at p are want once s is done, when
// s and the copy back say they are.
func checkDevice(r *faultRun, s driver.Stream, p devarray.Ptr, want []byte, what string) {
	if !r.ok(s.Synchronize(), what+": Synchronize") {
		return
	}
	got := testdev.RandomBytes(len(want))
	if r.ok(r.dev.CopyDtoH(got, p), what+": CopyDtoH") && !bytes.Equal(got, want) {
		r.fail("%s: the stream synchronized without error and the device holds other bytes", what)
	}
}

// freeBusy frees buf, waiting for its work when Free says it is busy: once
// the work's Wait has returned, Free must not be busy (a copy whose query
// fails after a fault never completes: it must not keep the buffer busy
// for ever). Then a second Free must return nil and the buffer be unusable.
func freeBusy(r *faultRun, buf *pinned.Buffer, w *eventWork, what string) {
	err := buf.Free()
	if errors.Is(err, pinned.ErrBusy) {
		if w == nil {
			r.fail("%s: busy with no work queued", what)
			return
		}
		_ = w.Wait()
		err = buf.Free()
		if errors.Is(err, pinned.ErrBusy) {
			r.fail("%s: still busy after its work's Wait returned: %v", what, err)
			return
		}
	}
	r.ok(err, what+": Free")
	if err := buf.Free(); err != nil {
		r.fail("%s: a second Free: %v", what, err)
	}
	if buf.Bytes() != nil || !errors.Is(buf.Err(), pinned.ErrFreed) {
		r.fail("%s: a freed buffer is still usable (Err %v)", what, buf.Err())
	}
}

// pinnedWorkflow is page-locked memory's life: buffers of Alloc, a pool's
// buffers (reused once their copy is done, held back while it is not) and
// registered Go memory, each the source of an async copy that guards it,
// freed while the copy may still run; Busy, Trim, Stats, then Close.
func pinnedWorkflow(r *faultRun) {
	dev := r.dev
	const n = 64 << 10
	dst, err := dev.Malloc(n)
	if !r.ok(err, "Malloc") {
		return
	}
	r.closeLater("Free device memory", func() error { return dev.Free(dst) })
	s, err := dev.NewStream()
	if !r.ok(err, "NewStream") {
		return
	}
	r.closeLater("stream Close", s.Close)
	p, err := pinned.NewPool(dev, 0)
	if !r.ok(err, "NewPool") {
		return
	}
	r.closeLater("pool Close", p.Close)
	for round := range 3 {
		// A buffer of Alloc.
		if b, err := pinned.Alloc(dev, n, pinned.Mapped); r.ok(err, "Alloc") {
			want := testdev.RandomBytes(n)
			copy(b.Bytes(), want)
			w := guarded(r, s, b, dst, "Alloc's buffer")
			if w != nil {
				if _, err := b.Busy(); err != nil {
					r.ok(err, "Busy")
				}
			}
			freeBusy(r, b, w, "Alloc's buffer")
			if w != nil {
				checkDevice(r, s, dst, want, "Alloc's buffer")
			}
		}

		// A pool's buffer, freed while its copy may run, and the next one.
		m := int64(1 + round*5000)
		if b, err := p.Alloc(m); r.ok(err, "pool Alloc") {
			want := testdev.RandomBytes(int(m))
			copy(b.Bytes(), want)
			old := b.HostPtr()
			w := guarded(r, s, b, dst, "pool buffer")
			r.ok(b.Free(), "pool buffer Free")
			if err := b.Free(); err != nil {
				r.fail("a second Free of a pool buffer: %v", err)
			}
			if b2, err := p.Alloc(m); r.ok(err, "pool Alloc again") {
				if b2.HostPtr() == old && w != nil {
					if done, err := w.Done(); !done && err == nil {
						r.fail("the pool handed out a block its copy still uses")
					}
				}
				copy(b2.Bytes(), testdev.RandomBytes(int(m))) // must not reach the device's copy
				freeBusy(r, b2, nil, "the pool's second buffer")
			}
			if w != nil && w.Wait() != nil && dev.Fault() != nil {
				// The block's copy failed with the fault: the pool finds
				// it when it looks at the block, or the driver refuses.
				if b3, err := p.Alloc(m); err == nil {
					r.fail("after the fault, the pool handed out a buffer")
					_ = b3.Free()
				} else {
					r.ok(err, "pool Alloc after the fault")
				}
			}
			if w != nil {
				checkDevice(r, s, dst, want[:m], "pool buffer")
			}
		}

		// Registered Go memory.
		mem := testdev.RandomBytes(n)
		want := append([]byte(nil), mem...)
		if b, err := pinned.Register(dev, mem, 0); r.ok(err, "Register") {
			w := guarded(r, s, b, dst, "registered buffer")
			err := b.Unregister()
			if errors.Is(err, pinned.ErrBusy) && w != nil {
				_ = w.Wait()
				err = b.Unregister()
			}
			if errors.Is(err, pinned.ErrBusy) {
				r.fail("registered buffer still busy after its work's Wait returned: %v", err)
				_ = s.Synchronize()
				err = b.Unregister()
			}
			r.ok(err, "Unregister")
			if w != nil {
				checkDevice(r, s, dst, want, "registered buffer")
			}
		}

		_, err := p.Trim()
		r.ok(err, "pool Trim")
		st := p.Stats()
		if led := dev.Ledger().Snapshot().Kinds[accounting.Pinned]; st.Cached != led.Cached || st.Cached < 0 || st.Live != 0 {
			r.fail("round %d: pool cached %d (%d live), ledger cached %d", round, st.Cached, st.Live, led.Cached)
		}
	}
	if dev.Fault() != nil {
		if b, err := p.Alloc(4096); err == nil {
			r.fail("a pool allocation after the fault succeeded")
			_ = b.Free()
		} else {
			r.ok(err, "pool Alloc after the fault")
		}
	}
}

// TestFaultPinned sweeps the fault over page-locked memory's life.
func TestFaultPinned(t *testing.T) {
	sweepFault(t, 16<<20, pinnedWorkflow)
}
