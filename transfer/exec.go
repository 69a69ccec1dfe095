package transfer

import (
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// exec runs the device steps of one copy: synchronously when s is nil,
// else queued on stream s. It keeps the temporary device arrays the copy
// needs until it is done.
type exec struct {
	dev   driver.Device
	s     driver.Stream
	k     func() (*kernels.Kernels, error)
	temps []*devarray.DevArray
}

func (x *exec) htod(dst devarray.Ptr, src []byte) error {
	if x.s == nil {
		return x.dev.CopyHtoD(dst, src)
	}
	return x.s.CopyHtoDAsync(dst, src)
}

func (x *exec) dtoh(dst []byte, src devarray.Ptr) error {
	if x.s == nil {
		return x.dev.CopyDtoH(dst, src)
	}
	return x.s.CopyDtoHAsync(dst, src)
}

func (x *exec) dtod(dst, src devarray.Ptr, n int64) error {
	if x.s == nil {
		return x.dev.CopyDtoD(dst, src, n)
	}
	return x.s.CopyDtoDAsync(dst, src, n)
}

func (x *exec) memcpy2D(p devarray.Memcpy2D) error {
	if x.s == nil {
		return x.dev.Memcpy2D(p)
	}
	return x.s.Memcpy2DAsync(p)
}

// kernel runs a pack or unpack kernel between two device arrays, one of
// them C-contiguous, and records its bytes under path (DtoD for device
// memory; HtoD or DtoH on the mapped path).
func (x *exec) kernel(dst, src *devarray.DevArray, dir accounting.Direction, path accounting.Path) error {
	k, err := x.k()
	if err != nil {
		return err
	}
	if x.s != nil {
		k = k.Async(x.s)
	}
	start := time.Now()
	if dst.IsContiguous() {
		err = k.Pack(dst, src)
	} else {
		err = k.Unpack(dst, src)
	}
	if err != nil {
		return err
	}
	took := time.Since(start) // a synchronous kernel has completed
	if x.s != nil {
		took = 0 // queued, not done: async work is timed with events, as the backends' async copies are
	}
	x.dev.Ledger().RecordCopy(dir, path, src.NBytes(), took)
	return nil
}

// temp allocates a C-contiguous device array like a, freed when the copy is done.
func (x *exec) temp(a *devarray.DevArray) (*devarray.DevArray, error) {
	t, err := devarray.Empty(x.dev, a.DType(), a.Shape()...)
	if err != nil {
		return nil, fmt.Errorf("transfer: temporary for a strided copy: %w", err)
	}
	x.temps = append(x.temps, t)
	return t, nil
}

// strided moves between two device arrays of which neither need be
// C-contiguous: one kernel when one of them is, else two through a
// temporary. The first kernel is recorded under dir and path, a second
// as a device-to-device kernel copy.
func (x *exec) strided(dst, src *devarray.DevArray, dir accounting.Direction, path accounting.Path) error {
	if dst.IsContiguous() || src.IsContiguous() {
		return x.kernel(dst, src, dir, path)
	}
	t, err := x.temp(src)
	if err != nil {
		return err
	}
	if dir == accounting.DtoH {
		// The host side is dst: the last step must be the one on the mapped path.
		if err := x.kernel(t, src, accounting.DtoD, accounting.PathKernel); err != nil {
			return err
		}
		return x.kernel(dst, t, dir, path)
	}
	if err := x.kernel(t, src, dir, path); err != nil {
		return err
	}
	return x.kernel(dst, t, accounting.DtoD, accounting.PathKernel)
}

// finish frees the temporaries once the device is done with them: at
// once for a synchronous copy, whose every step has completed, after the
// stream's work for an async one.
func (x *exec) finish() error {
	if len(x.temps) == 0 {
		return nil
	}
	var errs []error
	if x.s != nil {
		errs = append(errs, x.s.Synchronize())
	}
	for _, t := range x.temps {
		errs = append(errs, t.Free())
	}
	x.temps = nil
	return errors.Join(errs...)
}
