package devarray_test

import (
	"testing"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/sim"
)

// FuzzViews applies a sequence of view operations, decoded from the fuzz
// input, to a small random array. Every operation must either fail with an
// error or give a view whose elements match the independent reference
// model, whose extent lies inside the allocation, and which copied nothing.
func FuzzViews(f *testing.F) {
	f.Add([]byte{3, 4, 5, 0, 1, 1, 3, 2})
	f.Add([]byte{2, 6, 1, 2, 0, 3, 1, 0, 2, 4, 1, 0, 5, 9})
	f.Add([]byte{4, 2, 3, 2, 6, 0, 2, 1, 7, 3, 4, 8, 1, 1, 2})
	f.Add([]byte{1, 24, 5, 4, 2, 3, 4, 7, 2, 1, 0, 0, 0})
	dev, err := sim.New(sim.Config{Memory: 16 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { dev.Close() })

	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) < 1 {
			return
		}
		next := func() int {
			if len(prog) == 0 {
				return 0
			}
			b := prog[0]
			prog = prog[1:]
			return int(b)
		}
		nd := 1 + next()%4
		shape := make([]int, nd)
		n := 1
		for i := range shape {
			shape[i] = 1 + next()%6
			n *= shape[i]
		}
		host := randomFloat32(n)
		a, err := devarray.FromHost(dev, host, shape...)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Free()
		before := dev.Ledger().Snapshot()
		v, r := a, identity(shape)
		for steps := 0; len(prog) > 0 && steps < 8; steps++ {
			st := decodeStep(next, v)
			w, err := st.dev(v)
			if err != nil {
				continue // refused with an error: fine, as long as nothing panicked
			}
			v, r = w, st.ref(r)
		}
		after := dev.Ledger().Snapshot()
		if after.Copied() != before.Copied() || after.Allocations() != before.Allocations() {
			t.Fatalf("views copied or allocated: before %+v after %+v", before.Copied(), after.Copied())
		}
		lo, hi := v.Extent()
		if v.Size() > 0 && (int64(v.Ptr())+lo < int64(a.Ptr()) || int64(v.Ptr())+hi > int64(a.Ptr())+a.NBytes()) {
			t.Fatalf("view %v reaches [%d, %d) outside the allocation", v, lo, hi)
		}
		got, err := devarray.ToHost[float32](v)
		if err != nil {
			t.Fatal(err)
		}
		want := r.expect(host, shape)
		if len(got) != len(want) {
			t.Fatalf("view %v: %d elements, reference %d", v, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("view %v element %d = %v, reference %v", v, i, got[i], want[i])
			}
		}
	})
}

// decodeStep picks a view operation and its arguments from the input; the
// arguments range a little past the valid ones so that errors are exercised.
func decodeStep(next func() int, v *devarray.DevArray) viewStep {
	nd := max(v.NDim(), 1)
	shape := v.Shape()
	dim := func(axis int) int {
		if axis < len(shape) {
			return shape[axis]
		}
		return 1
	}
	switch next() % 8 {
	case 0:
		axis := next() % (nd + 1)
		start := next() % (dim(axis) + 2)
		stop := next() % (dim(axis) + 2)
		return sliceStep(axis, start, stop, 1+next()%3)
	case 1:
		axis := next() % (nd + 1)
		return indexStep(axis, next()%(dim(axis)+1))
	case 2:
		return flipStep(next() % (nd + 1))
	case 3:
		axes := make([]int, v.NDim())
		for i := range axes {
			axes[i] = i
		}
		for i := len(axes) - 1; i > 0; i-- {
			j := next() % (i + 1)
			axes[i], axes[j] = axes[j], axes[i]
		}
		return permuteStep(axes...)
	case 4:
		return transposeStep
	case 5:
		// Split or merge: reshape to a factorisation of the size.
		size := int(v.Size())
		k := 1 + next()%4
		if size%k != 0 {
			k = 1
		}
		if next()%2 == 0 {
			return reshapeStep(size)
		}
		return reshapeStep(k, -1)
	case 6:
		out := append([]int{1 + next()%3}, shape...)
		for i := 1; i < len(out); i++ {
			if out[i] == 1 {
				out[i] = 1 + next()%3
			}
		}
		return broadcastStep(out...)
	default:
		axis := next() % (nd + 1)
		return viewStep{"expand+squeeze",
			func(a *devarray.DevArray) (*devarray.DevArray, error) {
				e, err := a.ExpandDims(axis)
				if err != nil {
					return nil, err
				}
				return e.Squeeze(axis)
			},
			func(r ref) ref { return r }}
	}
}

// FuzzWrap wraps arbitrary descriptors: Wrap must refuse, with an error,
// anything whose extent overflows or leaves the allocation it names.
func FuzzWrap(f *testing.F) {
	f.Add(int64(0), int64(4), int64(3), int64(4), int64(16), uint8(12), int64(64))
	f.Add(int64(60), int64(-4), int64(16), int64(0), int64(4), uint8(12), int64(64))
	f.Add(int64(8), int64(1<<62), int64(3), int64(1), int64(1), uint8(1), int64(1<<40))
	f.Fuzz(func(t *testing.T, off, s0 int64, n0, s1, n1 int64, dt uint8, size int64) {
		base := devarray.Ptr(1 << 40)
		if off < -(1<<39) || off > 1<<39 || n0 < -1 || n1 < -1 || n0 > 1<<32 || n1 > 1<<32 {
			return
		}
		d := devarray.Descriptor{
			Ptr: base + devarray.Ptr(off), Shape: []int{int(n0), int(n1)}, Strides: []int64{s0, s1},
			DType: devarray.DType(dt % 17),
		}
		a, err := devarray.Wrap(nil, d, devarray.WithBounds(base, size))
		if err != nil {
			return
		}
		lo, hi := a.Extent()
		if a.Size() > 0 && (off+lo < 0 || off+hi > size) {
			t.Fatalf("Wrap accepted %+v with extent [%d, %d) outside [0, %d)", d, off+lo, off+hi, size)
		}
		if a.NBytes() != a.Size()*a.DType().Size() || a.NBytes() < 0 {
			t.Fatalf("NBytes %d for %d elements of %v", a.NBytes(), a.Size(), a.DType())
		}
	})
}
