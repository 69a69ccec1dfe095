package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// copyFunc moves the bytes of one copy and says what it was, for the ledger.
type copyFunc func() (copied, error)

// copied is what one copy moved: its direction, path and bytes, and when
// the modelled link is done with the managed pages it touched (zero: none
// to wait for; touchDevice).
type copied struct {
	dir      accounting.Direction
	path     accounting.Path
	n        int64
	migrated time.Time
}

// runCopy runs one copy with the memory read-locked, and records it.
func (d *Device) runCopy(op string, f copyFunc) error { return d.copyOn(nil, op, f) }

// copyOn is runCopy for a copy that stream s runs (nil: none): over a
// modelled link, the copy begins when s could begin it (streamClock),
// and s learns when it completed there.
func (d *Device) copyOn(s *stream, op string, f copyFunc) error {
	if err := d.deviceWork(op); err != nil {
		return err
	}
	if injected(&d.copyCountdown) {
		return fmt.Errorf("sim: %s: %w", op, driver.ErrInjected)
	}
	start := time.Now()
	c, err := func() (copied, error) {
		d.mu.RLock()
		defer d.mu.RUnlock()
		return f()
	}()
	if err != nil {
		return fmt.Errorf("sim: %s: %w", op, err)
	}
	waitUntil(c.migrated) // outside the lock: the managed pages the copy touched cross first
	dir, path, n := c.dir, c.path, c.n
	worked, from := time.Since(start), start
	if s != nil && !s.clock.startAt.IsZero() && s.clock.startAt.Before(start) {
		from = s.clock.startAt
	}
	if end, ok := d.cfg.Link.pace(dir, path, n, from); ok && s != nil { // outside the lock: a slow link holds up no allocation
		s.clock.endAt = latest(end, from.Add(worked)) // a memory copy slower than the link takes its own time
	}
	d.ledger.RecordCopy(dir, path, n, time.Since(start))
	return nil
}

func (d *Device) htod(dst devarray.Ptr, src []byte) copyFunc {
	return func() (copied, error) {
		b, err := d.devMem(dst, int64(len(src)))
		if err != nil {
			return copied{}, err
		}
		copy(b, src)
		return copied{accounting.HtoD, d.hostPath(src), int64(len(src)), d.cross(d.touchDevice(dst, int64(len(src)), true))}, nil
	}
}

func (d *Device) dtoh(dst []byte, src devarray.Ptr) copyFunc {
	return func() (copied, error) {
		b, err := d.devMem(src, int64(len(dst)))
		if err != nil {
			return copied{}, err
		}
		copy(dst, b)
		return copied{accounting.DtoH, d.hostPath(dst), int64(len(dst)), d.cross(d.touchDevice(src, int64(len(dst)), false))}, nil
	}
}

func (d *Device) dtod(dst, src devarray.Ptr, n int64) copyFunc {
	return func() (copied, error) {
		s, err := d.devMem(src, n)
		if err != nil {
			return copied{}, err
		}
		t, err := d.devMem(dst, n)
		if err != nil {
			return copied{}, err
		}
		copy(t, s)
		c := d.touchDevice(src, n, false)
		c.add(d.touchDevice(dst, n, true))
		return copied{accounting.DtoD, accounting.PathD2D, n, d.cross(c)}, nil
	}
}

// CopyHtoD copies len(src) bytes from host memory to the device.
func (d *Device) CopyHtoD(dst devarray.Ptr, src []byte) error {
	if _, err := d.pageable("copy HtoD", src); err != nil {
		return err
	}
	return d.completeChecked("copy HtoD", d.syncHostSide([]access{devBytes(dst, int64(len(src)), true)}, src, false),
		func() error { return d.runCopy("copy HtoD", d.htod(dst, src)) })
}

// CopyDtoH copies len(dst) bytes from the device to host memory.
func (d *Device) CopyDtoH(dst []byte, src devarray.Ptr) error {
	if _, err := d.pageable("copy DtoH", dst); err != nil {
		return err
	}
	return d.completeChecked("copy DtoH", d.syncHostSide([]access{devBytes(src, int64(len(dst)), false)}, dst, true),
		func() error { return d.runCopy("copy DtoH", d.dtoh(dst, src)) })
}

// CopyDtoD copies n bytes within the device.
func (d *Device) CopyDtoD(dst, src devarray.Ptr, n int64) error {
	return d.completeChecked("copy DtoD", []access{devBytes(src, n, false), devBytes(dst, n, true)},
		func() error { return d.runCopy("copy DtoD", d.dtod(dst, src, n)) })
}

// Memcpy2D copies p.Height rows of p.Width bytes between pitched regions of
// host or device memory, as cuMemcpy2D does.
func (d *Device) Memcpy2D(p devarray.Memcpy2D) error {
	if _, _, err := d.pageableSides("copy 2D", as3D(p)); err != nil {
		return err
	}
	return d.completeChecked("copy 2D", d.syncPitched("copy 2D", as3D(p)), func() error { return d.runCopy("copy 2D", d.memcpy2D(p)) })
}

func (d *Device) memcpy2D(p devarray.Memcpy2D) copyFunc {
	return func() (copied, error) {
		if err := d.copyRows(p); err != nil {
			return copied{}, err
		}
		c := d.touchPitched(p.Src, p.SrcPitch, p.Height, p.Width, p.Height, 1, false)
		c.add(d.touchPitched(p.Dst, p.DstPitch, p.Height, p.Width, p.Height, 1, true))
		dir, path := d.directionOf(p.Dst, p.Src)
		return copied{dir: dir, path: path, n: p.Width * p.Height, migrated: d.cross(c)}, nil
	}
}

// copyRows checks and copies the rows of a pitched copy; the managed
// pages it touched are its caller's to settle (touchPitched).
func (d *Device) copyRows(p devarray.Memcpy2D) error {
	if p.Width < 0 || p.Height < 0 || p.SrcPitch < p.Width || p.DstPitch < p.Width {
		return fmt.Errorf("width %d, height %d, pitches %d and %d: pitches must be at least the width: %w",
			p.Width, p.Height, p.SrcPitch, p.DstPitch, driver.ErrInvalidValue)
	}
	if p.Height > 1 && max(p.SrcPitch, p.DstPitch) > driver.MaxPitch {
		return fmt.Errorf("pitches %d and %d: a pitched copy takes at most %d, as on a GPU: %w",
			p.SrcPitch, p.DstPitch, int64(driver.MaxPitch), driver.ErrInvalidValue)
	}
	src, err := d.region(p.Src, p.SrcPitch, p.Width, p.Height)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	dst, err := d.region(p.Dst, p.DstPitch, p.Width, p.Height)
	if err != nil {
		return fmt.Errorf("destination: %w", err)
	}
	for i := int64(0); i < p.Height; i++ {
		copy(dst[i*p.DstPitch:i*p.DstPitch+p.Width], src[i*p.SrcPitch:i*p.SrcPitch+p.Width])
	}
	return nil
}

// directionOf returns the direction and path of a copy between two places.
func (d *Device) directionOf(dst, src devarray.Place) (accounting.Direction, accounting.Path) {
	switch {
	case src.OnHost() && dst.OnHost():
		return accounting.HtoH, accounting.PathDirect
	case src.OnHost():
		return accounting.HtoD, d.hostPath(src.Host)
	case dst.OnHost():
		return accounting.DtoH, d.hostPath(dst.Host)
	}
	return accounting.DtoD, accounting.PathD2D
}

// Memcpy3D copies p.Depth slices of p.Height rows of p.Width bytes, as
// cuMemcpy3D does.
func (d *Device) Memcpy3D(p devarray.Memcpy3D) error {
	if _, _, err := d.pageableSides("copy 3D", p); err != nil {
		return err
	}
	return d.completeChecked("copy 3D", d.syncPitched("copy 3D", p), func() error { return d.runCopy("copy 3D", d.memcpy3D(p)) })
}

func (d *Device) memcpy3D(p devarray.Memcpy3D) copyFunc {
	return func() (copied, error) {
		if p.Width < 0 || p.Depth < 0 || p.Height < 0 || p.DstHeight < p.Height || p.SrcHeight < p.Height {
			return copied{}, fmt.Errorf("width %d, height %d, depth %d, slice heights %d and %d: want no negative sizes and slice heights at least the height: %w",
				p.Width, p.Height, p.Depth, p.DstHeight, p.SrcHeight, driver.ErrInvalidValue)
		}
		// Check each whole side first, so that a bad copy moves nothing.
		for _, side := range []struct {
			pl            devarray.Place
			pitch, height int64
		}{{p.Src, p.SrcPitch, p.SrcHeight}, {p.Dst, p.DstPitch, p.DstHeight}} {
			if p.Depth == 0 || p.Height == 0 {
				break
			}
			if side.pitch < p.Width || side.pitch > math.MaxInt64/side.height {
				return copied{}, fmt.Errorf("pitch %d for width %d and slice height %d: %w", side.pitch, p.Width, side.height, driver.ErrInvalidValue)
			}
			if _, err := d.region(side.pl, side.pitch*side.height, (p.Height-1)*side.pitch+p.Width, p.Depth); err != nil {
				return copied{}, err
			}
		}
		for z := int64(0); z < p.Depth; z++ {
			plane := devarray.Memcpy2D{
				Dst: advance(p.Dst, z*p.DstPitch*p.DstHeight), Src: advance(p.Src, z*p.SrcPitch*p.SrcHeight),
				DstPitch: p.DstPitch, SrcPitch: p.SrcPitch, Width: p.Width, Height: p.Height,
			}
			if err := d.copyRows(plane); err != nil {
				return copied{}, fmt.Errorf("slice %d: %w", z, err)
			}
		}
		c := d.touchPitched(p.Src, p.SrcPitch, p.SrcHeight, p.Width, p.Height, p.Depth, false)
		c.add(d.touchPitched(p.Dst, p.DstPitch, p.DstHeight, p.Width, p.Height, p.Depth, true))
		dir, path := d.directionOf(p.Dst, p.Src)
		return copied{dir: dir, path: path, n: p.Width * p.Height * p.Depth, migrated: d.cross(c)}, nil
	}
}

// advance returns the place off bytes further on.
func advance(pl devarray.Place, off int64) devarray.Place {
	if pl.OnHost() {
		return devarray.Place{Host: pl.Host[off:]}
	}
	return devarray.Place{Dev: pl.Dev + devarray.Ptr(off)}
}

// CopyPeer copies n bytes from src on this device to dst on another sim
// device and returns when they are there, after the work queued on both
// devices' default streams. The two devices' memory is locked in a fixed
// order, so peer copies in both directions at once cannot deadlock.
func (d *Device) CopyPeer(dst devarray.Ptr, dstDev driver.Device, src devarray.Ptr, n int64) error {
	peer, ok := dstDev.(*Device)
	if !ok || peer == d {
		return fmt.Errorf("sim: copy peer: the destination must be another sim device: %w", driver.ErrInvalidValue)
	}
	if err := peer.legacy.drain(); err != nil {
		return fmt.Errorf("sim: copy peer: destination %v: %w", peer.DeviceID(), err)
	}
	if peer.check != nil {
		if err := peer.check.check(opSpec{kind: "copy peer (destination)", l: peer.check.legacy,
			accesses: []access{devBytes(dst, n, true)}, hostWaitsAfter: true}); err != nil {
			return err
		}
	}
	return d.completeChecked("copy peer (source)", []access{devBytes(src, n, false)}, func() error { return d.copyPeer(dst, peer, src, n) })
}

func (d *Device) copyPeer(dst devarray.Ptr, peer *Device, src devarray.Ptr, n int64) error {
	if err := d.deviceWork("copy peer"); err != nil {
		return err
	}
	if err := peer.checkFault("copy peer: destination"); err != nil {
		return err
	}
	if injected(&d.copyCountdown) {
		return fmt.Errorf("sim: copy peer: %w", driver.ErrInjected)
	}
	first, second := d, peer
	if peer.base < d.base {
		first, second = peer, d
	}
	first.mu.RLock()
	defer first.mu.RUnlock()
	second.mu.RLock()
	defer second.mu.RUnlock()
	start := time.Now()
	s, err := d.devMem(src, n)
	if err != nil {
		return fmt.Errorf("sim: copy peer: source: %w", err)
	}
	t, err := peer.devMem(dst, n)
	if err != nil {
		return fmt.Errorf("sim: copy peer: destination on %v: %w", peer.DeviceID(), err)
	}
	copy(t, s)
	d.ledger.RecordCopy(accounting.Peer, accounting.PathPeer, n, time.Since(start))
	return nil
}

// Access calls f with the device memory of each range, each of which must
// lie inside one live allocation (or mapped host memory), after the work
// queued on the default stream, and returns when f has. No memory can be
// freed while f runs.
func (d *Device) Access(ranges []driver.Range, f func(mem [][]byte) error) error {
	return d.completeChecked("kernel", kernelAccesses(ranges), func() error { return d.access(ranges, f) })
}

// Launch runs f on the memory of ranges as a kernel launch does on a GPU:
// queued on stream s (nil: the default stream), it returns at once, and f
// runs when the stream reaches it — with the device's latency, after the
// call has returned. Errors of f, such as a range that is no longer
// allocated by then, are the stream's and reported by its Synchronize.
// Kernels' Go references run through it.
func (d *Device) Launch(s driver.Stream, ranges []driver.Range, f func(mem [][]byte) error) error {
	return d.launch(s, ranges, func() error { return d.access(ranges, f) })
}

// launch queues run, a kernel, on stream s (nil: the default stream), or
// runs it at once where nothing could tell the difference.
func (d *Device) launch(s driver.Stream, ranges []driver.Range, run func() error) error {
	return d.launchOp(s, "kernel", ranges, run)
}

// launchOp is launch with the name the stream race checker gives the
// operation in its reports ("kernel saxpy").
func (d *Device) launchOp(s driver.Stream, kind string, ranges []driver.Range, run func() error) error {
	st := d.legacy
	if s != nil {
		var ok bool
		if st, ok = simStream(s); !ok || st.d != d {
			return fmt.Errorf("sim: launch: the stream is not from this device: %w", driver.ErrInvalidValue)
		}
	}
	if err := d.checkFault("launch"); err != nil {
		return err
	}
	if d.check != nil {
		_, pt := s.(perThreadStream)
		if err := st.checkOp(pt, opSpec{kind: kind, accesses: kernelAccesses(ranges)}); err != nil {
			return err
		}
	}
	if st == d.legacy && d.cfg.Latency <= 0 && st.pending.Load() == 0 {
		st.logical.queued() // done at once, but a GPU's launch would still be in flight
		return safely(run)
	}
	return st.enqueue(run)
}

func (d *Device) access(ranges []driver.Range, f func(mem [][]byte) error) error {
	if err := d.deviceWork("kernel"); err != nil {
		return err
	}
	var migrated time.Time
	err := d.inspect(ranges, func(mem [][]byte) error {
		if err := f(mem); err != nil {
			return err
		}
		migrated = d.cross(d.touchRanges(ranges))
		return nil
	})
	waitUntil(migrated) // the kernel is done once the pages it faulted in have crossed
	return err
}

// inspect calls f with the memory of ranges, checked and read-locked, as
// device work and as Peek: no fault is counted or reported.
func (d *Device) inspect(ranges []driver.Range, f func(mem [][]byte) error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	mems := make([][]byte, len(ranges))
	for i, r := range ranges {
		b, err := d.devMem(r.Ptr, r.N)
		if err != nil {
			return fmt.Errorf("sim: access range %d: %w", i, err)
		}
		mems[i] = b
	}
	return f(mems)
}

// region returns the bytes a pitched copy touches on one side.
func (d *Device) region(pl devarray.Place, pitch, width, height int64) ([]byte, error) {
	var n int64
	if height > 0 {
		if height > 1 && pitch > (math.MaxInt64-width)/(height-1) {
			return nil, fmt.Errorf("pitch %d × %d rows: %w", pitch, height, driver.ErrInvalidValue)
		}
		n = (height-1)*pitch + width
	}
	if pl.OnHost() {
		if n > int64(len(pl.Host)) {
			return nil, fmt.Errorf("host buffer of %d bytes, copy needs %d: %w", len(pl.Host), n, driver.ErrInvalidValue)
		}
		return pl.Host[:n], nil
	}
	return d.devMem(pl.Dev, n)
}
