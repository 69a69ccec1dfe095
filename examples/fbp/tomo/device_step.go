package tomo

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// runner runs plan methods on host data: one device, one copier for every
// transfer (the fastest path for the memory at hand), one workspace.
type runner struct {
	env      plan.Env
	copier   *transfer.Copier
	path     transfer.Path // the copies' path; PathAuto: the copier's choice
	degraded bool          // a method fell back to its slower algorithm (ErrPerfDegraded)
}

// onDevice is one step in the life of a chunk: in (host, shape inShape) goes
// up, m runs on it, and its output comes down into out, which must have
// the output's size. Everything the step allocates on the device is freed
// before it returns, also on failure.
func (r *runner) onDevice(m plan.Method, in []float32, inShape [3]int, out []float32, params plan.Params) error {
	d, err := devarray.Empty(r.env.Dev, DType, inShape[:]...)
	if err != nil {
		return err
	}
	defer d.Free()
	if err := r.copier.Copy(transfer.Dev(d), transfer.Host(in, inShape[:]...), transfer.Via(r.path)); err != nil {
		return err
	}
	res, err := m.Run(r.env, d, 0, params)
	if errors.Is(err, accounting.ErrPerfDegraded) {
		r.degraded, err = true, nil
	}
	if err != nil {
		return err
	}
	if res != d {
		defer res.Free()
	}
	if res.Size() != int64(len(out)) {
		return fmt.Errorf("tomo: %s made %v, want %d elements: %w", m.Name(), res.Shape(), len(out), devarray.ErrShape)
	}
	return r.copier.Copy(transfer.Host(out, res.Shape()...), transfer.Dev(res), transfer.Via(r.path))
}
