package plan

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/cuarray/cuarray/devarray"
)

// Identity is httomo's worked example of an estimator: a method that
// needs room for its input and its output and nothing else. Its Run
// copies a C-contiguous slab into a new array of the same shape and
// dtype, any dtype. It is registered in Default as "identity".
var Identity Model = identity{}

func init() {
	if err := Default.Register(Identity); err != nil {
		panic(err) // a second "identity" in this package: a bug here, not bad input
	}
}

type identity struct{}

func (identity) Name() string { return "identity" }

// Parameters returns none: identity takes no parameter.
func (identity) Parameters() map[string]int { return map[string]int{} }

// String names the method and its parameters: "identity (a plan.Method;
// parameters: none)".
func (m identity) String() string { return methodString(m) }

// check is the estimator's check of its input: a slice axis of a 3-D
// array, a dtype, no parameters, no negative size.
func (m identity) check(sliceDim int, other [2]int, dtype devarray.DType, params Params) error {
	switch {
	case sliceDim < 0 || sliceDim > 2:
		return fmt.Errorf("plan: %s: slice axis %d of a 3-D array: %w", m.Name(), sliceDim, devarray.ErrShape)
	case other[0] < 0 || other[1] < 0:
		return fmt.Errorf("plan: %s: slices of %v: %w", m.Name(), other, devarray.ErrShape)
	case !dtype.Valid():
		return fmt.Errorf("plan: %s: dtype %v: %w", m.Name(), dtype, devarray.ErrDType)
	}
	for k := range params {
		return fmt.Errorf("plan: %s: unknown parameter %q (it takes none): %w", m.Name(), k, ErrParam)
	}
	return nil
}

// slabBytes is s slices of other of dtype, unrounded; -1 past int64.
func slabBytes(s int64, other [2]int, dtype devarray.DType) int64 {
	if s < 0 {
		return -1
	}
	n := uint64(dtype.Size())
	for _, d := range []uint64{uint64(s), uint64(other[0]), uint64(other[1])} {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > 1<<63-1 {
			return -1
		}
		n = lo
	}
	return int64(n)
}

// Allocs: the input slab and the output slab.
func (m identity) Allocs(sliceDim int, other [2]int, dtype devarray.DType, s int64, params Params) ([]Alloc, error) {
	if err := m.check(sliceDim, other, dtype, params); err != nil {
		return nil, err
	}
	b := slabBytes(s, other, dtype)
	return []Alloc{{"input", b}, {"output", b}}, nil
}

func (m identity) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, params Params) (int, devarray.DType, error) {
	if err := m.check(sliceDim, other, dtype, params); err != nil {
		return 0, dtype, err
	}
	return MaxFit(available, func(s int64) int64 {
		return Total([]Alloc{{"input", slabBytes(s, other, dtype)}, {"output", slabBytes(s, other, dtype)}}, Device)
	}), dtype, nil
}

func (m identity) Run(env Env, in *devarray.DevArray, sliceDim int, params Params) (*devarray.DevArray, error) {
	if env.Dev == nil {
		return nil, fmt.Errorf("plan: %s: no device: %w", m.Name(), ErrNil)
	}
	if err := in.Err(); err != nil {
		return nil, fmt.Errorf("plan: %s: %w", m.Name(), err)
	}
	if in.NDim() != 3 || !in.IsContiguous() {
		return nil, fmt.Errorf("plan: %s: a %d-D array (C-contiguous: %v): want a C-contiguous 3-D one: %w", m.Name(), in.NDim(), in.IsContiguous(), devarray.ErrShape)
	}
	shape := in.Shape()
	if err := m.check(sliceDim, [2]int{shape[(sliceDim+1)%3], shape[(sliceDim+2)%3]}, in.DType(), params); err != nil {
		return nil, err
	}
	out, err := devarray.Empty(env.Dev, in.DType(), shape...)
	if err != nil {
		return nil, err
	}
	if n := in.NBytes(); n > 0 {
		if err := env.Dev.CopyDtoD(out.Ptr(), in.Ptr(), n); err != nil {
			return nil, errors.Join(err, out.Free())
		}
	}
	return out, nil
}
