package transfer

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/pinned"
)

// runSync runs the copy and waits for it.
func (j *job) runSync() error {
	x := &exec{dev: j.c.dev, k: j.c.kernels}
	var arrays []*devarray.DevArray
	for _, e := range []Endpoint{j.dst, j.src} {
		if e.side == OnDevice {
			arrays = append(arrays, e.arr)
		}
	}
	// Neither the arrays' memory nor the pinned buffers can be freed while
	// the copy runs.
	running := newRunning()
	defer running.end()
	j.pend = running
	for _, e := range []Endpoint{j.dst, j.src} {
		if e.side == InPinned {
			if err := e.buf.Guard(running); err != nil {
				return fmt.Errorf("transfer: %w", err)
			}
		}
	}
	err := devarray.Use(func() error { return j.run(x) }, arrays...)
	return errors.Join(err, x.finish())
}

// running guards the pinned buffers of a synchronous copy until it returns.
type running struct{ done chan struct{} }

func newRunning() *running { return &running{done: make(chan struct{})} }

func (r *running) end() { close(r.done) }

// Done reports whether the copy has returned.
func (r *running) Done() (bool, error) {
	select {
	case <-r.done:
		return true, nil
	default:
		return false, nil
	}
}

// Wait waits until the copy has returned.
func (r *running) Wait() error {
	<-r.done
	return nil
}

// run moves the bytes along the chosen path.
func (j *job) run(x *exec) error {
	if j.n == 0 {
		return nil
	}
	if err := j.runPath(x); err != nil {
		return fmt.Errorf("transfer: %v copy of %s: %w", j.choice.Path, accounting.FormatBytes(j.n), err)
	}
	return nil
}

// runPath is run's move along j.choice.Path, its error not yet wrapped.
func (j *job) runPath(x *exec) error {
	switch p := j.choice.Path; {
	case j.dst.side != OnDevice && j.src.side != OnDevice:
		return copyHost(j.c.dev, j.dst, j.src)
	case p == PathDirect:
		return j.runDirect(x)
	case p == PathPinned:
		return j.runDriver(x)
	case p == PathStaged:
		return j.runStaged(x)
	case p == PathMapped:
		return j.runMapped(x)
	case p == PathD2D:
		return j.runD2D(x)
	case p == PathPeer:
		return j.runPeer(x)
	case p == PathRegistered:
		return j.runRegistered(x)
	}
	return nil
}

// runDirect hands pageable memory to the driver, after the copier's
// registrations that would leave it partly page-locked are released
// (regCache.clearPartial). Where one cannot be, because another copy uses
// it, a copy the planner sent here takes the staged ring instead; one that
// asked for the direct path fails with pinned.ErrBusy. So for memory that
// page-locked memory of the program's partly covers: the backend refuses
// it (driver.ErrPartlyLocked) before any driver copy, and the planner's
// copy takes the staged ring; one that asked for the direct path fails.
func (j *job) runDirect(x *exec) error {
	_, host, _ := j.sides()
	if err := j.c.reg.clearPartial(host.mem); err != nil {
		if j.opt.Path != PathAuto || !errors.Is(err, pinned.ErrBusy) {
			return fmt.Errorf("direct copy of %s: %w", accounting.FormatBytes(j.n), err)
		}
		instead := *j
		instead.choice = Choice{Path: PathStaged}
		return instead.runPath(x)
	}
	err := j.runDriver(x)
	if err != nil && j.opt.Path == PathAuto && errors.Is(err, driver.ErrPartlyLocked) {
		// Partly page-locked by memory the copier did not register (the
		// program's registrations, pinned buffers): the backend refused the
		// range before the driver saw it, and the staged ring copies all of
		// it through page-locked buffers of its own (for a strided side, the
		// rows an earlier driver call moved again, the same bytes).
		instead := *j
		instead.choice = Choice{Path: PathStaged}
		return instead.runPath(x)
	}
	return err
}

// sides returns the device and host endpoints and whether the copy goes to the device.
func (j *job) sides() (dev, host Endpoint, toDevice bool) {
	if j.dst.side == OnDevice {
		return j.dst, j.src, true
	}
	return j.src, j.dst, false
}

// runMapped runs a kernel that reads or writes the mapped host memory in place.
func (j *job) runMapped(x *exec) error {
	dev, host, toDevice := j.sides()
	p, err := host.buf.DevPtr()
	if err != nil {
		return err
	}
	view, err := devarray.Wrap(x.dev, devarray.Descriptor{
		Ptr: p + devarray.Ptr(host.zero()), Shape: host.arr.Shape(), Strides: host.arr.Strides(),
		DType: host.arr.DType(), Device: x.dev.DeviceID(),
	}, devarray.WithBounds(p, int64(len(host.mem))))
	if err != nil {
		return err
	}
	if toDevice {
		return x.strided(dev.arr, view, accounting.HtoD, accounting.PathMapped)
	}
	return x.strided(view, dev.arr, accounting.DtoH, accounting.PathMapped)
}

// runD2D copies within the device: one driver copy when both sides are
// contiguous, else pack kernels.
func (j *job) runD2D(x *exec) error {
	if j.dst.contiguous() && j.src.contiguous() {
		return x.dtod(j.dst.arr.Ptr(), j.src.arr.Ptr(), j.n)
	}
	return x.strided(j.dst.arr, j.src.arr, accounting.DtoD, accounting.PathKernel)
}

// runPeer copies between two devices: strided sides are packed into (or
// unpacked from) a contiguous temporary on their own device. The driver's
// peer copy is synchronous: on a stream, the stream's earlier work is
// waited for first.
func (j *job) runPeer(x *exec) error {
	dstDev, err := deviceOf(j.dst, Endpoint{})
	if err != nil {
		return err
	}
	if x.s != nil {
		if err := x.s.Synchronize(); err != nil {
			return err
		}
	}
	src := j.src.arr
	if !src.IsContiguous() {
		if src, err = x.temp(j.src.arr); err != nil {
			return err
		}
		if err := x.kernel(src, j.src.arr, accounting.DtoD, accounting.PathKernel); err != nil {
			return err
		}
		if err := x.finishKernels(); err != nil {
			return err
		}
	}
	if j.dst.contiguous() {
		return x.dev.CopyPeer(j.dst.arr.Ptr(), dstDev, src.Ptr(), j.n)
	}
	t, err := devarray.Empty(dstDev, j.dst.arr.DType(), j.dst.arr.Shape()...)
	if err != nil {
		return err
	}
	defer t.Free()
	if err := x.dev.CopyPeer(t.Ptr(), dstDev, src.Ptr(), j.n); err != nil {
		return err
	}
	k, err := kernels.New(dstDev)
	if err != nil {
		return err
	}
	defer k.Close()
	start := time.Now()
	if err := k.Unpack(j.dst.arr, t); err != nil {
		return err
	}
	if err := dstDev.Synchronize(); err != nil {
		return err
	}
	dstDev.Ledger().RecordCopy(accounting.DtoD, accounting.PathKernel, j.n, time.Since(start))
	return nil
}

// finishKernels waits for the kernels queued so far.
func (x *exec) finishKernels() error {
	if x.s != nil {
		return x.s.Synchronize()
	}
	return x.dev.Synchronize()
}

// copyHost copies between two host endpoints in Go, recorded as a direct
// host-to-host copy in dev's ledger when there is a device.
func copyHost(dev driver.Device, dst, src Endpoint) error {
	if dst.arr.DType() != src.arr.DType() || !slices.Equal(dst.arr.Shape(), src.arr.Shape()) {
		return fmt.Errorf("transfer: copy %v %v into %v %v: %w", src.arr.DType(), src.arr.Shape(), dst.arr.DType(), dst.arr.Shape(), ErrMismatch)
	}
	n := src.nbytes()
	start := time.Now()
	if dst.contiguous() {
		newHostLayout(src).gather(dst.hostAt(0)[:n], 0)
	} else {
		packed := make([]byte, n)
		newHostLayout(src).gather(packed, 0)
		newHostLayout(dst).scatter(packed, 0)
	}
	if dev != nil {
		dev.Ledger().RecordCopy(accounting.HtoH, accounting.PathDirect, n, time.Since(start))
	}
	return nil
}
