package accounting_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
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

// call runs a synchronous call, which must return nil only when its work
// is done: one during which the device faulted must fail. It reports
// whether the call returned nil.
func (r *faultRun) call(what string, f func() error) bool {
	before := r.dev.Fault()
	err := f()
	if err == nil && before == nil && r.dev.Fault() != nil {
		r.fail("%s returned nil, and the device faulted during it", what)
	}
	return r.ok(err, what)
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

// useScratch writes fresh bytes into n bytes of scratch memory at p and
// reads them back: what a call that borrowed it does.
func useScratch(r *faultRun, p devarray.Ptr, n int64, what string) {
	n = min(n, 64<<10)
	src := testdev.RandomBytes(int(n))
	if !r.call(what+": CopyHtoD", func() error { return r.dev.CopyHtoD(p, src) }) {
		return
	}
	got := testdev.RandomBytes(int(n))
	if r.call(what+": CopyDtoH", func() error { return r.dev.CopyDtoH(got, p) }) && !bytes.Equal(got, src) {
		r.fail("%s: the scratch memory does not hold what was written", what)
	}
}

// workspaceWorkflow is a workspace's life: borrows that grow it (each a
// synchronize, a free and an allocation), a borrow of a range larger than
// the device (the fallback to the smaller size), a size query and
// Preallocate, SetManual, then Free.
func workspaceWorkflow(r *faultRun) {
	dev := r.dev
	w := accounting.NewWorkspace(dev)
	r.closeLater("workspace Free", w.Free)
	borrow := func(minBytes, wantBytes int64, what string) {
		var p devarray.Ptr
		var got int64
		var release func()
		if !r.call(what+": BorrowRange", func() (err error) { p, got, release, err = w.BorrowRange(minBytes, wantBytes); return err }) {
			if errors.Is(w.Free(), accounting.ErrWorkspaceBorrowed) {
				r.fail("%s: a failed borrow left the workspace borrowed", what)
			}
			return
		}
		if got < minBytes || w.Size() < got {
			r.fail("%s: lent %d bytes of %d for %d..%d", what, got, w.Size(), minBytes, wantBytes)
		}
		if snap := dev.Ledger().Snapshot().Kinds[accounting.Device]; snap.Current != w.Size() {
			r.fail("%s: the workspace holds %d bytes, the device %d", what, w.Size(), snap.Current)
		}
		useScratch(r, p, got, what)
		release()
		release()
	}
	for i, n := range []int64{1000 + rand.Int64N(1000), 5000 + rand.Int64N(5000), 500, 1 << 20} {
		borrow(n, n, fmt.Sprint("borrow ", i))
	}
	borrow(64<<10, 1<<40, "a range larger than the device")

	r.ok(w.StartQuery(), "StartQuery")
	for _, n := range []int64{3000, 70000 + rand.Int64N(1000), 100} {
		if err := w.Need(n); !accounting.IsSizeQuery(err) {
			r.fail("Need %d: %v", n, err)
		}
	}
	if size, err := w.Preallocate(); r.call("Preallocate", func() error { return err }) {
		if w.Size() != size || w.Scheme() != accounting.WorkspacePreallocated {
			r.fail("Preallocate: %d bytes, the workspace holds %d (%v)", size, w.Size(), w.Scheme())
		}
		borrow(size, size, "preallocated")
	}
	manual := int64(200<<10 + rand.IntN(1000))
	if r.call("SetManual", func() error { return w.SetManual(manual) }) {
		borrow(manual/2, manual, "manual")
	}
	if r.call("Free", w.Free) && w.Size() != 0 {
		r.fail("Free returned nil and the workspace holds %d bytes", w.Size())
	}
}

// TestFaultWorkspace sweeps the fault over a workspace's life.
func TestFaultWorkspace(t *testing.T) {
	sweepFault(t, 16<<20, workspaceWorkflow)
}
