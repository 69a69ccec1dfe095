//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// record adds a finished copy to the ledger.
func (d *Device) record(dir accounting.Direction, path accounting.Path, n int64, start time.Time) {
	d.ledger.RecordCopy(dir, path, n, time.Since(start))
}

// CopyHtoD copies len(src) bytes from host memory to the device and
// returns when they are there: from pageable memory the driver returns
// once the bytes are staged, so the backend waits for the DMA too.
func (d *Device) CopyHtoD(dst devarray.Ptr, src []byte) error {
	start := time.Now()
	path, err := d.hostSide("cuda: copy HtoD", src)
	if err != nil {
		return err
	}
	if len(src) > 0 {
		err := d.call(func() error {
			if err := fromCu(cu.MemcpyHtoD(cu.DevicePtr(dst), ptrOf(src), int64(len(src)))); err != nil || path != accounting.PathDirect {
				return err
			}
			return settle()
		})
		if err != nil {
			return fmt.Errorf("cuda: copy HtoD %d bytes to %v: %w", len(src), dst, d.outside(err, driver.Range{Ptr: dst, N: int64(len(src))}))
		}
	}
	d.record(accounting.HtoD, path, int64(len(src)), start)
	return nil
}

// CopyDtoH copies len(dst) bytes from the device to host memory.
func (d *Device) CopyDtoH(dst []byte, src devarray.Ptr) error {
	start := time.Now()
	path, err := d.hostSide("cuda: copy DtoH", dst)
	if err != nil {
		return err
	}
	if len(dst) > 0 {
		err := d.call(func() error { return fromCu(cu.MemcpyDtoH(ptrOf(dst), cu.DevicePtr(src), int64(len(dst)))) })
		if err != nil {
			return fmt.Errorf("cuda: copy DtoH %d bytes from %v: %w", len(dst), src, d.outside(err, driver.Range{Ptr: src, N: int64(len(dst))}))
		}
	}
	d.record(accounting.DtoH, path, int64(len(dst)), start)
	return nil
}

// CopyDtoD copies n bytes within the device and returns when they are
// there (cuMemcpyDtoD only queues the copy; the backend waits for it).
func (d *Device) CopyDtoD(dst, src devarray.Ptr, n int64) error {
	if n < 0 {
		return fmt.Errorf("cuda: copy DtoD %d bytes: %w", n, driver.ErrInvalidValue)
	}
	start := time.Now()
	if n > 0 {
		err := d.call(func() error {
			if err := fromCu(cu.MemcpyDtoD(cu.DevicePtr(dst), cu.DevicePtr(src), n)); err != nil {
				return err
			}
			return settle()
		})
		if err != nil {
			return fmt.Errorf("cuda: copy DtoD %d bytes %v -> %v: %w", n, src, dst, d.outside(err, driver.Range{Ptr: dst, N: n}, driver.Range{Ptr: src, N: n}))
		}
	}
	d.record(accounting.DtoD, accounting.PathD2D, n, start)
	return nil
}

// copy3D is a validated 2-D or 3-D copy, ready for the driver.
type copy3D struct {
	dst, src             copyPlace
	dstPitch, dstHeight  int64
	srcPitch, srcHeight  int64
	width, height, depth int64
	dir                  accounting.Direction
	path                 accounting.Path
}

// span returns the bytes a pitched box touches on one side, or an error.
func span(pitch, sliceHeight, width, height, depth int64) (int64, error) {
	if width < 0 || height < 0 || depth < 0 || pitch < width || sliceHeight < height {
		return 0, fmt.Errorf("width %d, height %d, depth %d, pitch %d, slice height %d: %w", width, height, depth, pitch, sliceHeight, driver.ErrInvalidValue)
	}
	if width == 0 || height == 0 || depth == 0 {
		return 0, nil
	}
	if pitch > driver.MaxPitch && (height > 1 || depth > 1) {
		return 0, fmt.Errorf("pitch %d: a pitched copy takes at most %d: %w", pitch, int64(driver.MaxPitch), driver.ErrInvalidValue)
	}
	if sliceHeight > 0 && pitch > math.MaxInt64/sliceHeight/max(depth, 1) {
		return 0, fmt.Errorf("pitch %d × %d rows × %d slices overflows: %w", pitch, sliceHeight, depth, driver.ErrInvalidValue)
	}
	return (depth-1)*pitch*sliceHeight + (height-1)*pitch + width, nil
}

// place converts one side of a copy and checks a host side's length, so the
// driver never reads or writes past a Go slice, and that the bytes it
// touches there are not partly page-locked (Device.hostSide); it returns
// the ledger path of a host side.
func (d *Device) place(op string, pl devarray.Place, need int64) (copyPlace, accounting.Path, error) {
	if pl.OnHost() {
		if need > int64(len(pl.Host)) {
			return copyPlace{}, 0, fmt.Errorf("host buffer of %d bytes, copy needs %d: %w", len(pl.Host), need, driver.ErrInvalidValue)
		}
		path, err := d.hostSide(op, pl.Host[:need])
		if err != nil {
			return copyPlace{}, 0, err
		}
		return copyPlace{memType: memHost, host: ptrOf(pl.Host)}, path, nil
	}
	return copyPlace{memType: memDevice, dev: uintptr(pl.Dev)}, 0, nil
}

func (d *Device) prepare3D(op string, p devarray.Memcpy3D) (copy3D, error) {
	c := copy3D{
		dstPitch: p.DstPitch, dstHeight: p.DstHeight, srcPitch: p.SrcPitch, srcHeight: p.SrcHeight,
		width: p.Width, height: p.Height, depth: p.Depth,
	}
	nd, err := span(p.DstPitch, p.DstHeight, p.Width, p.Height, p.Depth)
	if err != nil {
		return c, fmt.Errorf("destination: %w", err)
	}
	ns, err := span(p.SrcPitch, p.SrcHeight, p.Width, p.Height, p.Depth)
	if err != nil {
		return c, fmt.Errorf("source: %w", err)
	}
	var dstPath, srcPath accounting.Path
	if c.dst, dstPath, err = d.place(op+", destination", p.Dst, nd); err != nil {
		return c, prefixed("destination", err)
	}
	if c.src, srcPath, err = d.place(op+", source", p.Src, ns); err != nil {
		return c, prefixed("source", err)
	}
	switch {
	case p.Src.OnHost() && p.Dst.OnHost():
		c.dir, c.path = accounting.HtoH, accounting.PathDirect
	case p.Src.OnHost():
		c.dir, c.path = accounting.HtoD, srcPath
	case p.Dst.OnHost():
		c.dir, c.path = accounting.DtoH, dstPath
	default:
		c.dir, c.path = accounting.DtoD, accounting.PathD2D
	}
	return c, nil
}

// prefixed returns err with what went wrong named before it, but a
// *driver.PartlyLockedError as it is: it names the copy and its side itself.
func prefixed(what string, err error) error {
	if errors.Is(err, driver.ErrPartlyLocked) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (c copy3D) bytes() int64 { return c.width * c.height * c.depth }

func (c copy3D) run(s *stream) error {
	if c.bytes() == 0 {
		return nil
	}
	if s == nil {
		return check(memcpy3D(c.dst, c.src, c.dstPitch, c.dstHeight, c.srcPitch, c.srcHeight, c.width, c.height, c.depth, nil, false))
	}
	return check(memcpy3D(c.dst, c.src, c.dstPitch, c.dstHeight, c.srcPitch, c.srcHeight, c.width, c.height, c.depth, cstream(s.s), true))
}

// as3D turns a 2-D copy into a 3-D copy of depth 1.
func as3D(p devarray.Memcpy2D) devarray.Memcpy3D {
	return devarray.Memcpy3D{
		Dst: p.Dst, Src: p.Src, DstPitch: p.DstPitch, SrcPitch: p.SrcPitch,
		DstHeight: p.Height, SrcHeight: p.Height, Width: p.Width, Height: p.Height, Depth: 1,
	}
}

// Memcpy2D copies p.Height rows of p.Width bytes (cuMemcpy2DUnaligned).
func (d *Device) Memcpy2D(p devarray.Memcpy2D) error { return d.memcpy("copy 2D", as3D(p)) }

// Memcpy3D copies p.Depth slices of p.Height rows of p.Width bytes (cuMemcpy3D).
func (d *Device) Memcpy3D(p devarray.Memcpy3D) error { return d.memcpy("copy 3D", p) }

func (d *Device) memcpy(op string, p devarray.Memcpy3D) error {
	c, err := d.prepare3D("cuda: "+op, p)
	if err != nil {
		return prefixed("cuda: "+op, err)
	}
	start := time.Now()
	err = d.call(func() error {
		if err := c.run(nil); err != nil || c.dir == accounting.DtoH || c.dir == accounting.HtoD && c.path != accounting.PathDirect {
			return err
		}
		return settle() // device to device and from pageable memory, the driver only queues the copy
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", op, err)
	}
	d.record(c.dir, c.path, c.bytes(), start)
	return nil
}

// CopyPeer copies n bytes from src on this GPU to dst on another and
// returns when they are there; the driver routes it over NVLink or PCIe,
// or through the host when the GPUs cannot reach each other. It queues the
// copy (cuMemcpyPeerAsync) on a stream of its own, which follows the work
// queued so far on this GPU's legacy default stream as the synchronous
// calls do, and waits for that stream only. It does not wait for work
// queued on the other GPU: what writes or reads dst there must be complete
// first (the synchronous calls are). cuMemcpyPeer would be "serialized
// with respect to all pending and future asynchronous work" of both GPUs:
// it would wait for every stream of theirs, non-blocking ones and long
// kernels included, and a stream held by a host function would hold it.
func (d *Device) CopyPeer(dst devarray.Ptr, dstDev driver.Device, src devarray.Ptr, n int64) error {
	peer, ok := dstDev.(*Device)
	if !ok || peer == d || n < 0 {
		return fmt.Errorf("cuda: copy peer: the destination must be another cuda device and n ≥ 0: %w", driver.ErrInvalidValue)
	}
	start := time.Now()
	if n > 0 {
		if err := peer.closedErr("copy peer to " + peer.DeviceID().String()); err != nil {
			return err
		}
		err := d.call(func() error {
			s, err := cu.MakeStream(cu.DefaultStream)
			if err != nil {
				return fromCu(err)
			}
			err = fromCu(cu.MemcpyPeerAsync(cu.DevicePtr(dst), peer.ctx, cu.DevicePtr(src), d.ctx, n, s))
			if err == nil {
				err = fromCu(s.Synchronize())
			}
			return errors.Join(err, fromCu(s.Destroy()))
		})
		if err != nil {
			return fmt.Errorf("cuda: copy peer %d bytes to %v: %w", n, peer.DeviceID(), err)
		}
	}
	d.record(accounting.Peer, accounting.PathPeer, n, start)
	return nil
}
