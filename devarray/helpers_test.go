package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
)

// newDev opens the test device (sim, or the GPU in a cuda build; see
// internal/testdev), closed when the test ends after a leak check.
func newDev(t testing.TB) device.Device {
	t.Helper()
	return testdev.Open(t)
}

func randomFloat32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rand.Float32()*2 - 1
	}
	return s
}

// ref models a view independently of strides: it maps each index of the
// view to the index of the original C-contiguous array it reads.
type ref struct {
	shape []int
	src   func(idx []int) []int
}

func identity(shape []int) ref {
	return ref{shape: append([]int(nil), shape...), src: func(idx []int) []int { return append([]int(nil), idx...) }}
}

func (r ref) with(shape []int, f func(idx []int) []int) ref {
	return ref{shape: shape, src: func(idx []int) []int { return r.src(f(idx)) }}
}

func (r ref) slice(axis, start, stop, step int) ref {
	shape := append([]int(nil), r.shape...)
	shape[axis] = (stop - start + step - 1) / step
	return r.with(shape, func(idx []int) []int {
		j := append([]int(nil), idx...)
		j[axis] = start + idx[axis]*step
		return j
	})
}

func (r ref) index(axis, i int) ref {
	shape := append(append([]int(nil), r.shape[:axis]...), r.shape[axis+1:]...)
	return r.with(shape, func(idx []int) []int {
		return append(append(append([]int(nil), idx[:axis]...), i), idx[axis:]...)
	})
}

func (r ref) flip(axis int) ref {
	n := r.shape[axis]
	return r.with(r.shape, func(idx []int) []int {
		j := append([]int(nil), idx...)
		j[axis] = n - 1 - idx[axis]
		return j
	})
}

func (r ref) permute(axes []int) ref {
	shape := make([]int, len(axes))
	for i, a := range axes {
		shape[i] = r.shape[a]
	}
	return r.with(shape, func(idx []int) []int {
		j := make([]int, len(idx))
		for i, a := range axes {
			j[a] = idx[i]
		}
		return j
	})
}

// reshape reads the elements in C order, whatever the strides.
func (r ref) reshape(shape []int) ref {
	shape = append([]int(nil), shape...)
	total, known := 1, 1
	for _, s := range r.shape {
		total *= s
	}
	for _, s := range shape {
		if s != -1 {
			known *= s
		}
	}
	for i, s := range shape {
		if s == -1 {
			shape[i] = total / known
		}
	}
	return r.with(shape, func(idx []int) []int { return unflatten(flatten(idx, shape), r.shape) })
}

func (r ref) broadcast(shape []int) ref {
	off := len(shape) - len(r.shape)
	return r.with(shape, func(idx []int) []int {
		j := make([]int, len(r.shape))
		for i := range j {
			if r.shape[i] != 1 {
				j[i] = idx[i+off]
			}
		}
		return j
	})
}

func flatten(idx, shape []int) int {
	f := 0
	for i, x := range idx {
		f = f*shape[i] + x
	}
	return f
}

func unflatten(f int, shape []int) []int {
	idx := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] > 0 {
			idx[i] = f % shape[i]
			f /= shape[i]
		}
	}
	return idx
}

// expect returns the view's elements in C order, read from orig (C-contiguous, origShape).
func (r ref) expect(orig []float32, origShape []int) []float32 {
	n := 1
	for _, s := range r.shape {
		n *= s
	}
	out := make([]float32, n)
	for f := range out {
		out[f] = orig[flatten(r.src(unflatten(f, r.shape)), origShape)]
	}
	return out
}
