package devarray_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
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

// shadow is what an array's memory must hold: its elements in C order.
type shadow struct {
	a     *devarray.DevArray
	shape []int
	vals  []float32
}

// check reads the array back; when the read succeeds it must hold vals.
func (s *shadow) check(r *faultRun, what string) {
	var got []float32
	if r.call(what+": ToHost", func() (err error) { got, err = devarray.ToHost[float32](s.a); return err }) &&
		!slices.Equal(got, s.vals) {
		r.fail("%s: ToHost returned nil and other values than the array holds", what)
	}
}

// viewOf is a view of an array and the model of it (helpers_test.go).
type viewOf struct {
	name  string
	make  func(a *devarray.DevArray) (*devarray.DevArray, error)
	model func(m ref) ref
}

func permuted(axes ...int) viewOf {
	return viewOf{fmt.Sprint("permuted ", axes),
		func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Permute(axes...) },
		func(m ref) ref { return m.permute(axes) }}
}

// sliced is the view of the first half of every axis but the first:
// rows with a pitch (and slices with a stride of whole rows), which a 2-D
// (3-D) pitched copy moves.
func sliced(shape []int) viewOf {
	return viewOf{"sliced",
		func(a *devarray.DevArray) (*devarray.DevArray, error) {
			var err error
			for k := 1; k < len(shape) && err == nil; k++ {
				a, err = a.Slice(k, 0, (shape[k]+1)/2)
			}
			return a, err
		},
		func(m ref) ref {
			for k := 1; k < len(shape); k++ {
				m = m.slice(k, 0, (shape[k]+1)/2, 1)
			}
			return m
		}}
}

// view checks a view of the array: read it (a pitched copy or a pack
// kernel), write fresh values into it (a pitched copy or an unpack
// kernel), and read the whole array back.
func (s *shadow) view(r *faultRun, vw viewOf, what string) {
	v, err := vw.make(s.a)
	if err != nil {
		r.fail("%s: view: %v", what, err)
		return
	}
	m := vw.model(identity(s.shape))
	var got []float32
	if r.call(what+": ToHost of the view", func() (err error) { got, err = devarray.ToHost[float32](v); return err }) &&
		!slices.Equal(got, m.expect(s.vals, s.shape)) {
		r.fail("%s: ToHost of the view returned nil and wrong values", what)
	}
	vals := randomFloat32(int(v.Size()))
	if r.call(what+": CopyFrom into the view", func() error { return v.CopyFrom(devarray.AsBytes(vals)) }) {
		for f, x := range vals {
			s.vals[flatten(m.src(unflatten(f, m.shape)), s.shape)] = x
		}
		s.check(r, what+" after CopyFrom")
		return
	}
	// A failed copy may have written some of the elements: the array's
	// contents are unknown, so later reads are not compared.
	s.vals = nil
}

// pitchCounter counts the pitched copies of a sim device.
type pitchCounter struct {
	*sim.Device
	copies2D, copies3D atomic.Int64
}

func (d *pitchCounter) Memcpy2D(p devarray.Memcpy2D) error {
	d.copies2D.Add(1)
	return d.Device.Memcpy2D(p)
}

func (d *pitchCounter) Memcpy3D(p devarray.Memcpy3D) error {
	d.copies3D.Add(1)
	return d.Device.Memcpy3D(p)
}

// devarrayWorkflow is an array's life on a device: FromHost, ToHost,
// CopyTo and CopyFrom, transposed and permuted 2-D and 3-D views small
// enough for pitched copies and large enough for the pack kernels, a
// Hold across Free, Zeros, and Free, whose failure leaves the array freed
// and a second Free harmless.
func devarrayWorkflow(r *faultRun) {
	dev := &pitchCounter{Device: r.dev}
	var arrays []*devarray.DevArray
	free := func(a *devarray.DevArray, what string) {
		err := a.Free()
		r.ok(err, what+": Free")
		if !errors.Is(a.Err(), devarray.ErrFreed) {
			r.fail("%s: after Free (error %v) the array is usable", what, err)
		}
		if err := a.Free(); err != nil {
			r.fail("%s: a second Free: %v", what, err)
		}
	}
	defer func() {
		for _, a := range arrays {
			free(a, "at the end")
		}
	}()
	for _, tc := range []struct {
		name  string
		shape []int
		views []viewOf
	}{
		{"2-D", []int{6 + rand.IntN(4), 8 + rand.IntN(8)}, []viewOf{permuted(1, 0)}},
		{"3-D", []int{3 + rand.IntN(3), 5, 4 + rand.IntN(3)}, []viewOf{permuted(2, 0, 1), permuted(1, 2, 0)}},
	} {
		tc.views = append(tc.views, sliced(tc.shape))
		n := 1
		for _, d := range tc.shape {
			n *= d
		}
		s := &shadow{shape: tc.shape, vals: randomFloat32(n)}
		if !r.call(tc.name+": FromHost", func() (err error) { s.a, err = devarray.FromHost(dev, s.vals, tc.shape...); return err }) {
			continue
		}
		arrays = append(arrays, s.a)
		s.check(r, tc.name)
		for _, vw := range tc.views {
			if s.vals == nil {
				break
			}
			s.view(r, vw, tc.name+" "+vw.name)
		}
		out := make([]byte, s.a.NBytes())
		if r.call(tc.name+": CopyTo", func() error { return s.a.CopyTo(out) }) && s.vals != nil &&
			!bytes.Equal(out, devarray.AsBytes(s.vals)) {
			r.fail("%s: CopyTo returned nil and wrong bytes", tc.name)
		}
	}

	// A Hold across Free: the last release frees the memory, and reports
	// the device's error when it cannot.
	if len(arrays) > 0 {
		a := arrays[0]
		arrays = arrays[1:]
		release, err := a.Hold()
		if err != nil {
			r.fail("Hold: %v", err)
		} else {
			if err := a.Free(); err != nil {
				r.fail("Free while held: %v", err)
			}
			if !errors.Is(a.Err(), devarray.ErrFreed) {
				r.fail("an array freed while held is usable")
			}
			r.ok(release(), "the last release")
			if err := release(); err != nil {
				r.fail("a second release: %v", err)
			}
			if err := a.Free(); err != nil {
				r.fail("a Free after the release: %v", err)
			}
		}
	}

	var z *devarray.DevArray
	if r.call("Zeros", func() (err error) { z, err = devarray.Zeros(dev, devarray.Float32, 16, 16); return err }) {
		arrays = append(arrays, z)
		var got []float32
		if r.call("ToHost of Zeros", func() (err error) { got, err = devarray.ToHost[float32](z); return err }) &&
			!slices.Equal(got, make([]float32, 256)) {
			r.fail("Zeros returned nil and the array is not zero")
		}
	}
	if dev.Fault() == nil {
		// The run with no fault took both ways of moving a strided view.
		snap := dev.Ledger().Snapshot()
		if snap.Copies[accounting.DtoD][accounting.PathKernel].Count == 0 {
			r.fail("no pack kernel ran")
		}
		if dev.copies2D.Load() == 0 || dev.copies3D.Load() == 0 {
			r.fail("pitched copies 2-D %d, 3-D %d: want some of each", dev.copies2D.Load(), dev.copies3D.Load())
		}
	}
}

// TestFaultDevArray sweeps the fault over an array's life on a device.
func TestFaultDevArray(t *testing.T) {
	sweepFault(t, 16<<20, devarrayWorkflow)
}
