package kernels

import (
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/plan"
)

// The slab methods' outputs (plan.Outputs): what a run writes back to the
// host, as its Run returns it.
var (
	_ plan.Outputs = scaleMethod{}
	_ plan.Outputs = transposeMethod{}
	_ plan.Outputs = filterMethod{}
	_ plan.Outputs = backprojectMethod{}
	_ plan.Outputs = reconstructMethod{}
	_ plan.Outputs = projectMethod{}
)

// OutputBytes: the slab, scaled in place.
func (m scaleMethod) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	return sameAsInput(m, sliceDim, other, dtype, s, p)
}

// OutputBytes: the slab with its two other axes swapped, as many bytes.
func (m transposeMethod) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	return sameAsInput(m, sliceDim, other, dtype, s, p)
}

// OutputBytes: the sinograms, filtered in place.
func (m filterMethod) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	return sameAsInput(m, sliceDim, other, dtype, s, p)
}

// OutputBytes: s images of size × size.
func (m backprojectMethod) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return 0, err
	}
	n := p.Get("size", other[1])
	return rawSlab(s, [2]int{n, n}, dtype), nil
}

// OutputBytes: s images of size × size, as backprojecting gives.
func (m reconstructMethod) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return 0, err
	}
	n := p.Get("size", other[1])
	return rawSlab(s, [2]int{n, n}, dtype), nil
}

// OutputBytes: s sinograms of angles × detectors.
func (m projectMethod) OutputBytes(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return 0, err
	}
	angles, det, err := projectGeometry(m.Name(), other[1], p)
	if err != nil {
		return 0, err
	}
	return rawSlab(s, [2]int{angles, det}, dtype), nil
}

// sameAsInput is the output of a method whose output holds as many bytes
// as its input, after m's own check of its arguments.
func sameAsInput(m plan.Method, sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) (int64, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return 0, err
	}
	return rawSlab(s, other, dtype), nil
}
