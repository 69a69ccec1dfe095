package transfer

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/pinned"
)

// Copier moves data to, from and on one device. It keeps what repeated
// copies reuse: the staging ring (pinned chunks, streams and events,
// allocated on the first staged copy), the kernels of the mapped path and
// the async copies in flight. It is safe for concurrent use; staged copies
// take turns on the ring. Close frees it all.
type Copier struct {
	dev    driver.Device
	opt    Options
	notice error // why a saved profile was not used

	mu     sync.Mutex
	k      *kernels.Kernels
	ops    map[*Op]struct{}
	staged map[driver.Stream]*Op // the last staged copy queued on each stream
	events driver.EventPool      // events of completed async copies, for the next ones
	closed bool
	busy   sync.WaitGroup // the synchronous copies running and the CopyAsync calls queueing (begin)
	closes chan struct{}  // made when Close begins, closed when it returns

	ringMu sync.Mutex // held by the staged copy using the ring
	ring   *ring
	trace  stageTrace // told the steps of the staged copies' chunks; nil: none (tests set it)

	reg *regCache // the registered path's registrations
}

// New returns a Copier for dev.
func New(dev driver.Device, opts ...Option) (*Copier, error) {
	if dev == nil {
		return nil, fmt.Errorf("transfer: new copier: no device: %w", driver.ErrInvalidValue)
	}
	opt, err := collect(Options{}, opts)
	if err != nil {
		return nil, err
	}
	var notice error
	if opt.Profile == nil {
		opt.Profile, notice = ProfileFor(dev.Info())
	}
	opt = sizeRing(opt, dev.Info().Backend == "sim", runtime.GOMAXPROCS(0)).withDefaults()
	c := &Copier{dev: dev, opt: opt, notice: notice, ops: make(map[*Op]struct{}), staged: make(map[driver.Stream]*Op),
		reg: &regCache{max: opt.RegisterBytes}}
	c.opt.reg = c.reg
	return c, nil
}

// Profile returns the cost model the planner uses, and, when a saved
// profile was not used (unreadable, bad, or made for another device),
// why: the planner then uses the defaults (DefaultProfile). The result is
// a copy.
func (c *Copier) Profile() (*Profile, error) {
	if c == nil {
		return nil, fmt.Errorf("transfer: nil Copier; make one with New: %w", driver.ErrInvalidValue)
	}
	return c.opt.Profile.clone(), c.notice
}

// Ring returns the staging ring's shape the copier's staged copies use.
func (c *Copier) Ring() RingShape {
	if c == nil {
		return RingShape{}
	}
	return RingShape{ChunkBytes: c.opt.ChunkBytes, Chunks: c.opt.Chunks, Streams: c.opt.Streams}
}

// Device returns the copier's device.
func (c *Copier) Device() driver.Device {
	if c == nil {
		return nil
	}
	return c.dev
}

// Copy copies src's elements into dst's and returns when they are there.
// The sides must have the same dtype and shape; each may have any strides.
// The path is the one asked for with Via, else the planner's (Plan).
// Every byte is recorded in the device's ledger under its path.
func (c *Copier) Copy(dst, src Endpoint, opts ...Option) error {
	j, err := c.prepare(dst, src, opts)
	if err != nil {
		return err
	}
	if err := c.begin(); err != nil {
		return err
	}
	defer c.busy.Done()
	return j.runSync()
}

// begin counts a copy Close must wait for: a synchronous one, or the
// queueing of an async one (whose Op is in c.ops before it ends). Once
// Close began it returns ErrClosed.
func (c *Copier) begin() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.busy.Add(1)
	return nil
}

// Plan returns the path Copy would take for these endpoints, and why.
func (c *Copier) Plan(dst, src Endpoint, opts ...Option) (Choice, error) {
	j, err := c.prepare(dst, src, opts)
	if err != nil {
		return Choice{}, err
	}
	if j.opt.Path == PathAuto {
		return choose(dst, src, j.n, j.opt, true), nil // the same path, with its reason
	}
	return j.choice, nil
}

// Close waits for the copies that began before it, synchronous and
// async, then frees its staging ring and kernels and releases the
// registered path's registrations (the Go memory they pinned is the
// garbage collector's again). Copies that begin later return ErrClosed.
// Close returns the errors of the async copies it waited for. A Close
// called while another runs waits for it, and returns nil.
func (c *Copier) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		closes := c.closes
		c.mu.Unlock()
		// The first Close may still be waiting for copies; this one's
		// caller must not free their memory, or close the device, before
		// they are done either.
		<-closes
		return nil
	}
	c.closed = true
	c.closes = make(chan struct{})
	defer close(c.closes)
	c.mu.Unlock()
	// No copy begins now. A copy that began completes (or fails with its
	// own error, not ErrClosed): the ring, kernels and registrations stay
	// until the last one is done.
	c.busy.Wait()
	c.mu.Lock()
	ops := make([]*Op, 0, len(c.ops))
	for op := range c.ops {
		ops = append(ops, op)
	}
	c.mu.Unlock()
	var errs []error
	for _, op := range ops {
		if err := op.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	c.ringMu.Lock()
	errs = append(errs, c.dropRing())
	c.ringMu.Unlock()
	errs = append(errs, c.reg.close(), c.closeEvents())
	c.mu.Lock()
	k := c.k
	c.k = nil
	c.mu.Unlock()
	if k != nil {
		errs = append(errs, k.Close())
	}
	return errors.Join(errs...)
}

// kernels returns the copier's kernels, loading them on first use. Only
// copies Close waits for call it (begin), so none loads them after Close
// has closed them.
func (c *Copier) kernels() (*kernels.Kernels, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.k == nil {
		k, err := kernels.New(c.dev)
		if err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
		c.k = k
	}
	return c.k, nil
}

// job is one prepared copy.
type job struct {
	c        *Copier
	dst, src Endpoint
	n        int64
	opt      Options
	choice   Choice
	pend     pinned.Pending // the copy's run (runSync) or Op, which guards its registration
}

// prepare checks the endpoints and picks the path.
func (c *Copier) prepare(dst, src Endpoint, opts []Option) (*job, error) {
	if c == nil {
		return nil, fmt.Errorf("transfer: nil Copier; make one with New: %w", driver.ErrInvalidValue)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	for _, e := range []struct {
		name string
		e    Endpoint
	}{{"destination", dst}, {"source", src}} {
		if e.e.err != nil {
			return nil, within("transfer: "+e.name, e.e.err)
		}
		if e.e.side == 0 {
			return nil, fmt.Errorf("transfer: %s: the zero Endpoint; make one with Dev, Pinned, Host or HostBytes: %w", e.name, driver.ErrInvalidValue)
		}
		if e.e.side == OnDevice {
			if err := e.e.arr.Err(); err != nil {
				return nil, fmt.Errorf("transfer: %s: %w", e.name, err)
			}
		}
		if e.e.side == InPinned && e.e.buf.Bytes() == nil {
			err := e.e.buf.Err()
			if err == nil {
				err = pinned.ErrFreed
			}
			return nil, fmt.Errorf("transfer: %s: %w", e.name, err)
		}
	}
	if dst.arr.DType() != src.arr.DType() || !slices.Equal(dst.arr.Shape(), src.arr.Shape()) {
		return nil, fmt.Errorf("transfer: copy %v %v into %v %v: want the same dtype and shape: %w",
			src.arr.DType(), src.arr.Shape(), dst.arr.DType(), dst.arr.Shape(), ErrMismatch)
	}
	if dst.arr.ReadOnly() {
		return nil, fmt.Errorf("transfer: destination: %w", devarray.ErrReadOnly)
	}
	if err := checkNotAliased(dst, src); err != nil {
		return nil, err
	}
	own := c.dev.DeviceID()
	for _, e := range []Endpoint{dst, src} {
		if e.side == OnDevice && e.arr.Device() != own && !(dst.side == OnDevice && src.side == OnDevice) {
			return nil, fmt.Errorf("transfer: array on %v, copier on %v: %w", e.arr.Device(), own, devarray.ErrDevice)
		}
		if e.side == InPinned && e.buf.Device().DeviceID() != own {
			return nil, fmt.Errorf("transfer: pinned buffer of %v, copier on %v: %w", e.buf.Device().DeviceID(), own, devarray.ErrDevice)
		}
	}
	if dst.side == OnDevice && src.side == OnDevice && src.arr.Device() != own {
		return nil, fmt.Errorf("transfer: source on %v, copier on %v (a copier moves from its own device): %w", src.arr.Device(), own, devarray.ErrDevice)
	}
	opt, err := apply(c.opt, opts)
	if err != nil {
		return nil, err
	}
	j := &job{c: c, dst: dst, src: src, n: src.nbytes(), opt: opt}
	if j.opt.Profile == nil {
		j.opt.Profile = c.opt.Profile
	}
	j.opt.reg = c.reg // WithOptions replaces the Options wholesale
	if j.opt.Path == PathAuto {
		j.choice = choose(dst, src, j.n, j.opt, false)
	} else {
		if j.opt.Path >= numPaths {
			return nil, fmt.Errorf("transfer: %v: %w", j.opt.Path, ErrPath)
		}
		j.choice = Choice{j.opt.Path, "asked for"}
	}
	if err := fits(j.choice.Path, dst, src); err != nil {
		return nil, err
	}
	return j, nil
}

// Copy copies src into dst with a Copier made for the copy and closed
// after it: convenient for one copy. Repeated copies, staged ones above
// all, are faster through a Copier kept open, which keeps its staging ring.
// The device is the one of the device side (the source's, for device to
// device) or of the pinned buffer; a copy between two Go slices needs none.
func Copy(dst, src Endpoint, opts ...Option) error {
	dev, err := deviceOf(dst, src)
	if err != nil {
		return err
	}
	if dev == nil {
		if err := firstErr(dst, src); err != nil {
			return err
		}
		return copyHost(nil, dst, src)
	}
	c, err := New(dev, opts...)
	if err != nil {
		return err
	}
	return errors.Join(c.Copy(dst, src), c.Close())
}

func firstErr(es ...Endpoint) error {
	for _, e := range es {
		if e.err != nil {
			return fmt.Errorf("transfer: %w", e.err)
		}
	}
	return nil
}

// deviceOf finds the device a copy between dst and src runs on, or nil.
func deviceOf(dst, src Endpoint) (driver.Device, error) {
	for _, e := range []Endpoint{src, dst} {
		switch {
		case e.err != nil:
			continue
		case e.side == InPinned:
			return e.buf.Device(), nil
		case e.side == OnDevice:
			switch b := e.arr.Backend().(type) {
			case driver.Device:
				return b, nil
			case interface{ Device() driver.Device }:
				return b.Device(), nil
			}
			return nil, fmt.Errorf("transfer: array on %v has no device to copy with (borrowed without a backend?); use a Copier: %w",
				e.arr.Device(), driver.ErrInvalidValue)
		}
	}
	return nil, nil
}
