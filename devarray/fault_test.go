package devarray_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/cuarray/cuarray/internal/faultsweep"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/sim"
)

// The sticky-fault sweeps (internal/faultsweep): the workflows below run with
// the fault at each of their device operations in turn.

// shadow is what an array's memory must hold: its elements in C order.
type shadow struct {
	a     *devarray.DevArray
	shape []int
	vals  []float32
}

// check reads the array back; when the read succeeds it must hold vals.
func (s *shadow) check(r *faultsweep.Run, what string) {
	var got []float32
	if r.Call(what+": ToHost", func() (err error) { got, err = devarray.ToHost[float32](s.a); return err }) &&
		!slices.Equal(got, s.vals) {
		r.Fail("%s: ToHost returned nil and other values than the array holds", what)
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
func (s *shadow) view(r *faultsweep.Run, vw viewOf, what string) {
	v, err := vw.make(s.a)
	if err != nil {
		r.Fail("%s: view: %v", what, err)
		return
	}
	m := vw.model(identity(s.shape))
	var got []float32
	if r.Call(what+": ToHost of the view", func() (err error) { got, err = devarray.ToHost[float32](v); return err }) &&
		!slices.Equal(got, m.expect(s.vals, s.shape)) {
		r.Fail("%s: ToHost of the view returned nil and wrong values", what)
	}
	vals := randomFloat32(int(v.Size()))
	if r.Call(what+": CopyFrom into the view", func() error { return v.CopyFrom(devarray.AsBytes(vals)) }) {
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
func devarrayWorkflow(r *faultsweep.Run) {
	dev := &pitchCounter{Device: r.Dev}
	var arrays []*devarray.DevArray
	free := func(a *devarray.DevArray, what string) {
		err := a.Free()
		r.OK(err, what+": Free")
		if !errors.Is(a.Err(), devarray.ErrFreed) {
			r.Fail("%s: after Free (error %v) the array is usable", what, err)
		}
		if err := a.Free(); err != nil {
			r.Fail("%s: a second Free: %v", what, err)
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
		if !r.Call(tc.name+": FromHost", func() (err error) { s.a, err = devarray.FromHost(dev, s.vals, tc.shape...); return err }) {
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
		if r.Call(tc.name+": CopyTo", func() error { return s.a.CopyTo(out) }) && s.vals != nil &&
			!bytes.Equal(out, devarray.AsBytes(s.vals)) {
			r.Fail("%s: CopyTo returned nil and wrong bytes", tc.name)
		}
	}

	// A Hold across Free: the last release frees the memory, and reports
	// the device's error when it cannot.
	if len(arrays) > 0 {
		a := arrays[0]
		arrays = arrays[1:]
		release, err := a.Hold()
		if err != nil {
			r.Fail("Hold: %v", err)
		} else {
			if err := a.Free(); err != nil {
				r.Fail("Free while held: %v", err)
			}
			if !errors.Is(a.Err(), devarray.ErrFreed) {
				r.Fail("an array freed while held is usable")
			}
			r.OK(release(), "the last release")
			if err := release(); err != nil {
				r.Fail("a second release: %v", err)
			}
			if err := a.Free(); err != nil {
				r.Fail("a Free after the release: %v", err)
			}
		}
	}

	var z *devarray.DevArray
	if r.Call("Zeros", func() (err error) { z, err = devarray.Zeros(dev, devarray.Float32, 16, 16); return err }) {
		arrays = append(arrays, z)
		var got []float32
		if r.Call("ToHost of Zeros", func() (err error) { got, err = devarray.ToHost[float32](z); return err }) &&
			!slices.Equal(got, make([]float32, 256)) {
			r.Fail("Zeros returned nil and the array is not zero")
		}
	}
	if dev.Fault() == nil {
		// The run with no fault took both ways of moving a strided view.
		snap := dev.Ledger().Snapshot()
		if snap.Copies[accounting.DtoD][accounting.PathKernel].Count == 0 {
			r.Fail("no pack kernel ran")
		}
		if dev.copies2D.Load() == 0 || dev.copies3D.Load() == 0 {
			r.Fail("pitched copies 2-D %d, 3-D %d: want some of each", dev.copies2D.Load(), dev.copies3D.Load())
		}
	}
}

// TestFaultDevArray sweeps the fault over an array's life on a device.
func TestFaultDevArray(t *testing.T) {
	faultsweep.Sweep(t, 16<<20, devarrayWorkflow)
}
