package kernels

import (
	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/kernel"
)

// ProjectStep is the distance, in pixels, between the samples Project takes
// along each ray.
const ProjectStep = 1.0

// ProjectWorkspace returns the workspace bytes Project uses for a angles of
// itemSize bytes: the table of their cosines and sines, as Backproject's.
func ProjectWorkspace(a int, itemSize int64) int64 { return BackprojectWorkspace(a, itemSize) }

// Project writes into sino, C-contiguous (slices, A, D), the parallel-beam
// forward projection (Radon transform) of img, C-contiguous (slices, N, N),
// over A angles evenly spaced in [0, π), in the geometry of Backproject:
// each value is the line integral, in pixel units, of the bilinearly
// interpolated image along the ray through detector bin j at angle a,
// sampled every ProjectStep pixels. Both arrays are float32 or both
// float64. The angle table is kept in ws (nil: a temporary workspace); in
// query mode the call reports its size and does not run.
func (k *Kernels) Project(sino, img *devarray.DevArray, ws *accounting.Workspace) error {
	const op = "project"
	if err := k.guard(op, sino, img); err != nil {
		return err
	}
	g, err := k.checkStacks(op, img, sino, false)
	if err != nil || g.sinoSize == 0 {
		return err
	}
	e, suffix, slices, a, d, n := g.e, g.suffix, g.slices, g.a, g.d, g.n
	return k.withTrigTable(op, g, ws, func(trig devarray.Ptr, tableBytes int64) error {
		return k.run("project_"+suffix, sino.Size(),
			[]kernel.Arg{kernel.Out(sino), kernel.In(img), kernel.Memory(trig, tableBytes, kernel.Read),
				kernel.I64(slices), kernel.I32(int32(a)), kernel.I32(int32(d)), kernel.I32(int32(n)), scalar(e, ProjectStep)},
			func(m [][]byte) { refProject(m[0], m[1], m[2], slices, a, d, n, ProjectStep, e) })
	}, sino, img)
}
