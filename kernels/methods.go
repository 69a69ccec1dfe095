package kernels

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/plan"
)

// The kernels' slab methods, for planning with package plan. Each one's
// MaxSlices counts exactly what its Run allocates: the input, the output
// when there is one, and the workspace, each rounded up to the granule.
var (
	// ScaleMethod multiplies a slab by the integer parameter "factor"
	// (default 2) in place.
	ScaleMethod plan.Method = scaleMethod{}
	// TransposeMethod swaps the two axes other than the slice axis into a
	// new C-contiguous array, with the Pack kernel.
	TransposeMethod plan.Method = transposeMethod{}
	// FilterMethod ramp-filters a slab of sinograms (slices, angles,
	// detectors) in place, sliced along axis 0.
	FilterMethod plan.Method = filterMethod{}
	// BackprojectMethod backprojects a slab of filtered sinograms (slices,
	// angles, detectors) into images (slices, N, N), N the parameter "size"
	// (default: the detector count).
	BackprojectMethod plan.Method = backprojectMethod{}
	// ReconstructMethod is the whole FBP: filter, then backproject, with
	// one workspace.
	ReconstructMethod plan.Method = reconstructMethod{}
	// ProjectMethod forward-projects a slab of images (slices, N, N) into
	// sinograms (slices, angles, detectors): the parameters "angles"
	// (default 180) and "detectors" (default N).
	ProjectMethod plan.Method = projectMethod{}
)

func init() {
	for _, m := range []plan.Method{ScaleMethod, TransposeMethod, FilterMethod, BackprojectMethod, ReconstructMethod, ProjectMethod} {
		if err := plan.Default.Register(m); err != nil {
			panic(err) // two methods of this package with one name: a bug here, not bad input
		}
	}
}

// shared returns kernels for dev: one per open GPU device, as loading the
// module costs a PTX compile; a fresh, free one on sim. The kernels of a
// device that has closed are forgotten (its Close unloaded their module),
// so a program that opens and closes devices does not keep them all.
func shared(dev driver.Device) (*Kernels, error) {
	if !driver.RunsModules(dev) {
		return New(dev)
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	for d := range sharedKernels {
		if c, ok := d.(interface{ Closed() bool }); ok && c.Closed() {
			delete(sharedKernels, d)
		}
	}
	if k, ok := sharedKernels[dev]; ok {
		return k, nil
	}
	k, err := New(dev)
	if err != nil {
		return nil, err
	}
	sharedKernels[dev] = k
	return k, nil
}

var (
	sharedMu      sync.Mutex
	sharedKernels = map[driver.Device]*Kernels{}
)

// slab returns the bytes of s slices whose other axes are other, of
// dtype, rounded up to the granule as allocated; -1 when that is past
// int64, which plan.MaxFit counts as not fitting (and sum passes on).
func slab(s int64, other [2]int, dtype devarray.DType) int64 {
	n, err := accounting.EstimateBytes([]int{int(s), other[0], other[1]}, dtype)
	if err != nil || s < 0 || int64(int(s)) != s {
		return -1
	}
	return n
}

// sum adds the byte counts of a run's allocations, -1 when one of them is
// -1 (past int64) or the sum is.
func sum(terms ...int64) int64 {
	var t int64
	for _, x := range terms {
		if x < 0 || t > math.MaxInt64-x {
			return -1
		}
		t += x
	}
	return t
}

// alloc is accounting.AllocBytes that keeps -1 (past int64) as -1.
func alloc(n int64) int64 {
	if n < 0 {
		return -1
	}
	return accounting.AllocBytes(n)
}

// checkParams is the methods' check of their parameters: every name is
// one the method takes, every value at least that name's minimum.
func checkParams(name string, p plan.Params, mins map[string]int) error {
	for k, v := range p {
		lo, ok := mins[k]
		switch {
		case !ok:
			return fmt.Errorf("kernels: %s: unknown parameter %q (it takes %v): %w", name, k, slices.Sorted(maps.Keys(mins)), plan.ErrParam)
		case v < lo:
			return fmt.Errorf("kernels: %s: parameter %s=%d: want at least %d: %w", name, k, v, lo, plan.ErrParam)
		}
	}
	return nil
}

// checkRun is the check at the top of every method's Run: a device, a
// live 3-D array, a slice axis of it, and parameters the method takes.
func checkRun(name string, env plan.Env, in *devarray.DevArray, sliceDim int, p plan.Params, mins map[string]int) error {
	if env.Dev == nil {
		return fmt.Errorf("kernels: %s: no device: %w", name, driver.ErrInvalidValue)
	}
	if err := in.Err(); err != nil {
		return fmt.Errorf("kernels: %s: %w", name, err)
	}
	if in.NDim() != 3 || sliceDim < 0 || sliceDim > 2 {
		return fmt.Errorf("kernels: %s: a %d-D array sliced along axis %d: want 3-D: %w", name, in.NDim(), sliceDim, devarray.ErrShape)
	}
	return checkParams(name, p, mins)
}

// The parameters each method takes, with their least values.
var (
	scaleParams       = map[string]int{"factor": math.MinInt}
	noParams          = map[string]int{}
	backprojectParams = map[string]int{"size": 1}
	projectParams     = map[string]int{"angles": 1, "detectors": 1}
)

// checkFloat is the estimators' check of the input dtype.
func checkFloat(name string, dtype devarray.DType) error {
	if dtype != devarray.Float32 && dtype != devarray.Float64 {
		return fmt.Errorf("kernels: %s: dtype %v: want float32 or float64: %w", name, dtype, devarray.ErrDType)
	}
	return nil
}

// checkSinogramAxis is the FBP methods' check: slabs of sinograms along axis 0.
func checkSinogramAxis(name string, sliceDim int) error {
	if sliceDim != 0 {
		return fmt.Errorf("kernels: %s: slices along axis %d: want sinograms (slices, angles, detectors) sliced along axis 0: %w", name, sliceDim, devarray.ErrShape)
	}
	return nil
}

type scaleMethod struct{}

func (scaleMethod) Name() string { return "kernels.scale" }

func (m scaleMethod) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	if err := errors.Join(checkFloat(m.Name(), dtype), checkParams(m.Name(), p, scaleParams)); err != nil {
		return 0, dtype, err
	}
	return plan.MaxFit(available, func(s int64) int64 { return slab(s, other, dtype) }), dtype, nil
}

func (m scaleMethod) Run(env plan.Env, in *devarray.DevArray, sliceDim int, p plan.Params) (*devarray.DevArray, error) {
	if err := checkRun(m.Name(), env, in, sliceDim, p, scaleParams); err != nil {
		return nil, err
	}
	k, err := shared(env.Dev)
	if err != nil {
		return nil, err
	}
	return in, k.Scale(in, float64(p.Get("factor", 2)))
}

type transposeMethod struct{}

func (transposeMethod) Name() string { return "kernels.transpose" }

func (m transposeMethod) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	if !dtype.Valid() {
		return 0, dtype, fmt.Errorf("kernels: %s: %w", m.Name(), devarray.ErrDType)
	}
	if err := checkParams(m.Name(), p, noParams); err != nil {
		return 0, dtype, err
	}
	return plan.MaxFit(available, func(s int64) int64 { return sum(slab(s, other, dtype), slab(s, other, dtype)) }), dtype, nil
}

func (m transposeMethod) Run(env plan.Env, in *devarray.DevArray, sliceDim int, p plan.Params) (*devarray.DevArray, error) {
	if err := checkRun(m.Name(), env, in, sliceDim, p, noParams); err != nil {
		return nil, err
	}
	k, err := shared(env.Dev)
	if err != nil {
		return nil, err
	}
	perm := []int{0, 1, 2}
	o := []int{0, 1, 2}[:0]
	for i := range 3 {
		if i != sliceDim {
			o = append(o, i)
		}
	}
	perm[o[0]], perm[o[1]] = o[1], o[0]
	view, err := in.Permute(perm...)
	if err != nil {
		return nil, err
	}
	out, err := devarray.Empty(env.Dev, in.DType(), view.Shape()...)
	if err != nil {
		return nil, err
	}
	if err := k.Pack(out, view); err != nil {
		return nil, errors.Join(err, out.Free())
	}
	return out, nil
}

type filterMethod struct{}

func (filterMethod) Name() string { return "fbp.filter" }

func (m filterMethod) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	if err := errors.Join(checkFloat(m.Name(), dtype), checkSinogramAxis(m.Name(), sliceDim), checkParams(m.Name(), p, noParams)); err != nil {
		return 0, dtype, err
	}
	angles, det := other[0], other[1]
	return plan.MaxFit(available, func(s int64) int64 {
		sino := slab(s, other, dtype)
		if sino < 0 {
			return -1 // and so is the workspace, which holds the filtered rows
		}
		return sum(sino, // the sinograms
			alloc(RampFilterWorkspace(s*int64(angles), det, dtype.Size()))) // taps and filtered rows
	}), dtype, nil
}

func (m filterMethod) Run(env plan.Env, in *devarray.DevArray, sliceDim int, p plan.Params) (*devarray.DevArray, error) {
	if err := errors.Join(checkRun(m.Name(), env, in, sliceDim, p, noParams), checkSinogramAxis(m.Name(), sliceDim)); err != nil {
		return nil, err
	}
	k, err := shared(env.Dev)
	if err != nil {
		return nil, err
	}
	return in, k.RampFilter(in, env.Workspace)
}

type backprojectMethod struct{}

func (backprojectMethod) Name() string { return "fbp.backproject" }

func (m backprojectMethod) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	if err := errors.Join(checkFloat(m.Name(), dtype), checkSinogramAxis(m.Name(), sliceDim), checkParams(m.Name(), p, backprojectParams)); err != nil {
		return 0, dtype, err
	}
	n := p.Get("size", other[1])
	return plan.MaxFit(available, func(s int64) int64 {
		return sum(slab(s, other, dtype), // the sinograms
			slab(s, [2]int{n, n}, dtype),                        // the images
			alloc(BackprojectWorkspace(other[0], dtype.Size()))) // the angle table
	}), dtype, nil
}

func (m backprojectMethod) Run(env plan.Env, in *devarray.DevArray, sliceDim int, p plan.Params) (*devarray.DevArray, error) {
	if err := errors.Join(checkRun(m.Name(), env, in, sliceDim, p, backprojectParams), checkSinogramAxis(m.Name(), sliceDim)); err != nil {
		return nil, err
	}
	return backproject(env, in, p.Get("size", in.Shape()[2]))
}

func backproject(env plan.Env, sino *devarray.DevArray, n int) (*devarray.DevArray, error) {
	k, err := shared(env.Dev)
	if err != nil {
		return nil, err
	}
	img, err := devarray.Empty(env.Dev, sino.DType(), sino.Shape()[0], n, n)
	if err != nil {
		return nil, err
	}
	if err := k.Backproject(img, sino, env.Workspace); err != nil {
		return nil, errors.Join(err, img.Free())
	}
	return img, nil
}

type reconstructMethod struct{}

func (reconstructMethod) Name() string { return "fbp.reconstruct" }

func (m reconstructMethod) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	if err := errors.Join(checkFloat(m.Name(), dtype), checkSinogramAxis(m.Name(), sliceDim), checkParams(m.Name(), p, backprojectParams)); err != nil {
		return 0, dtype, err
	}
	angles, det := other[0], other[1]
	n := p.Get("size", det)
	return plan.MaxFit(available, func(s int64) int64 {
		sino := slab(s, other, dtype)
		if sino < 0 {
			return -1 // and so is the filter's workspace
		}
		ws := max(RampFilterWorkspace(s*int64(angles), det, dtype.Size()), BackprojectWorkspace(angles, dtype.Size()))
		return sum(sino, // the sinograms, filtered in place
			alloc(ws),                    // one workspace, grown to the larger need
			slab(s, [2]int{n, n}, dtype)) // the images
	}), dtype, nil
}

func (m reconstructMethod) Run(env plan.Env, in *devarray.DevArray, sliceDim int, p plan.Params) (*devarray.DevArray, error) {
	if err := errors.Join(checkRun(m.Name(), env, in, sliceDim, p, backprojectParams), checkSinogramAxis(m.Name(), sliceDim)); err != nil {
		return nil, err
	}
	k, err := shared(env.Dev)
	if err != nil {
		return nil, err
	}
	ferr := k.RampFilter(in, env.Workspace)
	if ferr != nil && !errDegraded(ferr) {
		return nil, ferr
	}
	img, err := backproject(env, in, p.Get("size", in.Shape()[2]))
	if err != nil {
		return nil, err
	}
	return img, ferr // nil, or the filter's ErrPerfDegraded
}

type projectMethod struct{}

func (projectMethod) Name() string { return "fbp.project" }

// projectGeometry is the sinogram axes of a projection of N x N images.
func projectGeometry(name string, n int, p plan.Params) (angles, det int, err error) {
	angles, det = p.Get("angles", 180), p.Get("detectors", n)
	if angles < 1 || det < 1 {
		return 0, 0, fmt.Errorf("kernels: %s: %d angles, %d detectors: want at least 1 of each: %w", name, angles, det, devarray.ErrShape)
	}
	return angles, det, nil
}

func (m projectMethod) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	if err := errors.Join(checkFloat(m.Name(), dtype), checkSinogramAxis(m.Name(), sliceDim)); err != nil {
		return 0, dtype, err
	}
	if err := checkParams(m.Name(), p, projectParams); err != nil {
		return 0, dtype, err
	}
	angles, det, err := projectGeometry(m.Name(), other[1], p)
	if err != nil {
		return 0, dtype, err
	}
	return plan.MaxFit(available, func(s int64) int64 {
		return sum(slab(s, other, dtype), // the images
			slab(s, [2]int{angles, det}, dtype),           // the sinograms
			alloc(ProjectWorkspace(angles, dtype.Size()))) // the angle table
	}), dtype, nil
}

func (m projectMethod) Run(env plan.Env, in *devarray.DevArray, sliceDim int, p plan.Params) (*devarray.DevArray, error) {
	if err := errors.Join(checkRun(m.Name(), env, in, sliceDim, p, projectParams), checkSinogramAxis(m.Name(), sliceDim)); err != nil {
		return nil, err
	}
	if in.NDim() != 3 {
		return nil, fmt.Errorf("kernels: %s: a %d-D array: want images (slices, N, N): %w", m.Name(), in.NDim(), devarray.ErrShape)
	}
	shape := in.Shape()
	angles, det, err := projectGeometry(m.Name(), shape[2], p)
	if err != nil {
		return nil, err
	}
	k, err := shared(env.Dev)
	if err != nil {
		return nil, err
	}
	sino, err := devarray.Empty(env.Dev, in.DType(), shape[0], angles, det)
	if err != nil {
		return nil, err
	}
	if err := k.Project(sino, in, env.Workspace); err != nil {
		return nil, errors.Join(err, sino.Free())
	}
	return sino, nil
}
