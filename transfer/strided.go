package transfer

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// runDriver moves the bytes with the driver's copies, the direct and
// pinned paths, through devarray.StridedCopy, the one code path of every
// strided host-device copy: one pitched 2-D or 3-D copy where the two
// layouts allow, else one pack kernel for a strided device side, a host
// gather (or scatter) for a strided host side, and one contiguous copy.
func (j *job) runDriver(x *exec) error {
	dev, host, toDevice := j.sides()
	h, err := host.strided()
	if err != nil {
		return err
	}
	s := &steps{x: x, pinned: host.side == InPinned}
	err = devarray.StridedCopy(s, dev.arr, h, toDevice)
	return errors.Join(err, s.free())
}

// steps are an exec's operations as devarray.StridedCopy takes them:
// synchronous, or queued on the exec's stream.
type steps struct {
	x      *exec
	pinned bool              // the host side is page-locked: so is its temporary
	temps  []*driver.HostMem // page-locked temporaries
}

var _ devarray.StridedSteps = (*steps)(nil)

// HostTemp returns host memory for a strided host side's packed bytes:
// page-locked for a pinned side, so the copy stays on the pinned path.
func (s *steps) HostTemp(n int64) ([]byte, error) {
	if !s.pinned {
		return make([]byte, n), nil
	}
	m, err := s.x.dev.HostAlloc(n, 0)
	if err != nil {
		return nil, fmt.Errorf("transfer: page-locked temporary for a strided host side: %w", err)
	}
	s.temps = append(s.temps, m)
	return m.Bytes, nil
}

// free frees the page-locked temporaries, after the stream's work when the
// copy is queued on one.
func (s *steps) free() error {
	if len(s.temps) == 0 {
		return nil
	}
	var errs []error
	if s.x.s != nil {
		errs = append(errs, s.x.s.Synchronize())
	}
	for _, m := range s.temps {
		errs = append(errs, s.x.dev.HostFree(m))
	}
	s.temps = nil
	return errors.Join(errs...)
}

func (s *steps) CopyHtoD(dst devarray.Ptr, src []byte) error { return s.x.htod(dst, src) }
func (s *steps) CopyDtoH(dst []byte, src devarray.Ptr) error { return s.x.dtoh(dst, src) }
func (s *steps) Memcpy2D(p devarray.Memcpy2D) error          { return s.x.memcpy2D(p) }

func (s *steps) Memcpy3D(p devarray.Memcpy3D) (bool, error) {
	if s.x.s == nil {
		return true, s.x.dev.Memcpy3D(p)
	}
	return true, s.x.s.Memcpy3DAsync(p)
}

func (s *steps) Temp(a *devarray.DevArray) (*devarray.DevArray, error) { return s.x.temp(a) }

func (s *steps) Pack(dst, src *devarray.DevArray) error {
	return s.x.kernel(dst, src, accounting.DtoD, accounting.PathKernel)
}

func (s *steps) Unpack(dst, src *devarray.DevArray) error {
	return s.x.kernel(dst, src, accounting.DtoD, accounting.PathKernel)
}

// Scatter scatters what a copy brought to the host into a strided host
// side, once the stream has done the copy: an async copy to a host
// layout no pitched copy expresses completes before CopyAsync returns.
func (s *steps) Scatter(h *devarray.HostStrided, packed []byte) error {
	if s.x.s != nil {
		if err := s.x.s.Synchronize(); err != nil {
			return err
		}
	}
	return h.Scatter(packed, 0)
}

// countBlocks counts the pitched blocks of a host side's layout, up to
// limit, for the planner's cost model, which charges the direct and
// pinned paths for each (a block whose pitch a pitched copy cannot take
// counts as limit). Those paths move any layout in one driver copy
// (devarray.StridedCopy), but a layout of many blocks is gathered on the
// host first, all of it before the copy starts, where the staged path
// overlaps the gather of one chunk with the DMA of another.
func countBlocks(a *devarray.DevArray, limit int) int {
	n := 0
	stop := errors.New("enough")
	_ = devarray.Blocks(a.Shape(), a.Strides(), a.DType().Size(), func(b devarray.Block) error {
		if b.Height > 1 && b.Pitch > driver.MaxPitch {
			n = limit
		}
		if n++; n >= limit {
			return stop
		}
		return nil
	})
	return n
}
