package plan

import (
	"github.com/cuarray/cuarray/devarray"
)

// Outputs is a Method that says how many bytes its output holds: what a
// run of its slices writes back to the host (the input is what it reads
// from there). `cuarray plan -paths` plans the transfers of both.
type Outputs interface {
	Method
	// OutputBytes returns the bytes of the output of a run of s slices
	// along sliceDim whose two other axes are other, of dtype, as the
	// array holds them (an in-place method's is its input); -1 past int64.
	// A dtype, axis or parameter the method does not take is an error.
	OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, params Params) (int64, error)
}

// InputBytes returns the bytes of s slices whose two other axes are
// other, of dtype, as the array holds them: a run's input; -1 past int64.
func InputBytes(s int64, other [2]int, dtype devarray.DType) int64 {
	if other[0] < 0 || other[1] < 0 {
		return -1
	}
	return slabBytes(s, other, dtype)
}

// OutputBytes returns the bytes of the output of method m's run of s
// slices (Outputs), and false when m does not say.
func OutputBytes(m Method, sliceDim int, other [2]int, dtype devarray.DType, s int64, params Params) (int64, bool, error) {
	o, ok := m.(Outputs)
	if !ok {
		return 0, false, nil
	}
	n, err := o.OutputBytes(sliceDim, other, dtype, s, params)
	return n, true, err
}

// OutputBytes: identity's output is a copy of its input.
func (m identity) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, params Params) (int64, error) {
	if err := m.check(sliceDim, other, dtype, params); err != nil {
		return 0, err
	}
	return slabBytes(s, other, dtype), nil
}
