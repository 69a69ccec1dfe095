package kernels

import (
	"math/bits"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/plan"
)

// The slab methods' allocations (plan.Model), unrounded, for planning in
// httomo's raw convention. Each lists what its MaxSlices counts, in the
// same order; plan's tests check that rounding these gives MaxSlices.
var (
	_ plan.Model = scaleMethod{}
	_ plan.Model = transposeMethod{}
	_ plan.Model = filterMethod{}
	_ plan.Model = backprojectMethod{}
	_ plan.Model = reconstructMethod{}
	_ plan.Model = projectMethod{}
)

// rawSlab is s slices of other of dtype in bytes, unrounded; -1 past int64.
func rawSlab(s int64, other [2]int, dtype devarray.DType) int64 {
	if s < 0 || other[0] < 0 || other[1] < 0 {
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

// rampBytes is RampFilterWorkspace for s slabs of sinograms other, -1
// when the sinograms are past int64 (and so is the workspace).
func rampBytes(s int64, other [2]int, dtype devarray.DType) int64 {
	if rawSlab(s, other, dtype) < 0 {
		return -1
	}
	return RampFilterWorkspace(s*int64(other[0]), other[1], dtype.Size())
}

func (m scaleMethod) Allocs(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) ([]plan.Alloc, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return nil, err
	}
	return []plan.Alloc{{Name: "slab", Bytes: rawSlab(s, other, dtype)}}, nil
}

func (m transposeMethod) Allocs(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) ([]plan.Alloc, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return nil, err
	}
	b := rawSlab(s, other, dtype)
	return []plan.Alloc{{Name: "input", Bytes: b}, {Name: "output", Bytes: b}}, nil
}

func (m filterMethod) Allocs(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) ([]plan.Alloc, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return nil, err
	}
	return []plan.Alloc{
		{Name: "sinograms", Bytes: rawSlab(s, other, dtype)},
		{Name: "workspace", Bytes: rampBytes(s, other, dtype)}, // taps and filtered rows
	}, nil
}

func (m backprojectMethod) Allocs(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) ([]plan.Alloc, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return nil, err
	}
	n := p.Get("size", other[1])
	return []plan.Alloc{
		{Name: "sinograms", Bytes: rawSlab(s, other, dtype)},
		{Name: "images", Bytes: rawSlab(s, [2]int{n, n}, dtype)},
		{Name: "workspace", Bytes: BackprojectWorkspace(other[0], dtype.Size())}, // the angle table
	}, nil
}

func (m reconstructMethod) Allocs(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) ([]plan.Alloc, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return nil, err
	}
	n := p.Get("size", other[1])
	ws := rampBytes(s, other, dtype)
	if ws >= 0 {
		ws = max(ws, BackprojectWorkspace(other[0], dtype.Size())) // one workspace, grown to the larger need
	}
	return []plan.Alloc{
		{Name: "sinograms", Bytes: rawSlab(s, other, dtype)}, // filtered in place
		{Name: "workspace", Bytes: ws},
		{Name: "images", Bytes: rawSlab(s, [2]int{n, n}, dtype)},
	}, nil
}

func (m projectMethod) Allocs(sliceDim int, other [2]int, dtype devarray.DType, s int64, p plan.Params) ([]plan.Alloc, error) {
	if _, _, err := m.MaxSlices(sliceDim, other, dtype, 0, p); err != nil {
		return nil, err
	}
	angles, det, err := projectGeometry(m.Name(), other[1], p)
	if err != nil {
		return nil, err
	}
	return []plan.Alloc{
		{Name: "images", Bytes: rawSlab(s, other, dtype)},
		{Name: "sinograms", Bytes: rawSlab(s, [2]int{angles, det}, dtype)},
		{Name: "workspace", Bytes: ProjectWorkspace(angles, dtype.Size())}, // the angle table
	}, nil
}
