package transfer

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// ring is the staged path's pinned chunks, each with the event of the last
// DMA that used it, and the streams the DMA is spread over.
type ring struct {
	chunk   int64
	slots   []*driver.HostMem
	events  []driver.Event
	streams []driver.Stream
}

func (r *ring) fits(o Options) bool {
	return r != nil && r.chunk == o.ChunkBytes && len(r.slots) == o.Chunks && len(r.streams) == o.Streams
}

// getRing returns a ring for o, allocating it (and dropping one of another
// shape) when needed. A failure half-way frees what it allocated. The
// caller holds c.ringMu. Only copies Close waits for call it (begin), so
// none makes a ring after Close has dropped it; one that began before
// Close uses the ring even while Close waits for it.
func (c *Copier) getRing(o Options) (*ring, error) {
	if c.ring.fits(o) {
		return c.ring, nil
	}
	if err := c.dropRing(); err != nil {
		return nil, err
	}
	r := &ring{chunk: o.ChunkBytes}
	err := func() error {
		for range o.Chunks {
			h, err := c.dev.HostAlloc(o.ChunkBytes, driver.Staging)
			if err != nil {
				return fmt.Errorf("staging chunk: %w", err)
			}
			r.slots = append(r.slots, h)
			ev, err := c.dev.NewEvent()
			if err != nil {
				return fmt.Errorf("staging event: %w", err)
			}
			r.events = append(r.events, ev)
		}
		for range o.Streams {
			s, err := c.dev.NewStream()
			if err != nil {
				return fmt.Errorf("staging stream: %w", err)
			}
			r.streams = append(r.streams, s)
		}
		return nil
	}()
	if err != nil {
		return nil, errors.Join(err, r.free(c.dev))
	}
	c.ring = r
	return r, nil
}

// dropRing frees the ring. The caller holds c.ringMu.
func (c *Copier) dropRing() error {
	if c.ring == nil {
		return nil
	}
	err := c.ring.free(c.dev)
	c.ring = nil
	return err
}

func (r *ring) free(dev driver.Device) error {
	var errs []error
	for _, s := range r.streams {
		errs = append(errs, s.Close())
	}
	for _, e := range r.events {
		errs = append(errs, e.Close())
	}
	for _, h := range r.slots {
		errs = append(errs, dev.HostFree(h))
	}
	return errors.Join(errs...)
}

// runStaged moves pageable host memory through the ring. A strided device
// side is packed into (or unpacked from) a contiguous temporary on the
// device; a strided host side is gathered into (or scattered from) the
// chunks by the host copies themselves.
func (j *job) runStaged(x *exec) error {
	dev, host, toDevice := j.sides()
	d := dev.arr
	if !dev.contiguous() {
		t, err := x.temp(dev.arr)
		if err != nil {
			return err
		}
		if !toDevice {
			if err := x.kernel(t, dev.arr, accounting.DtoD, accounting.PathKernel); err != nil {
				return err
			}
			if x.s == nil { // the ring's streams must see the packed bytes; a caller's stream, which carries the DMAs too, orders them itself
				if err := x.finishKernels(); err != nil {
					return err
				}
			}
		}
		d = t
	}
	if err := j.stage(x, d.Ptr(), newHostLayout(host), toDevice); err != nil {
		return err
	}
	if toDevice && d != dev.arr {
		return x.kernel(dev.arr, d, accounting.DtoD, accounting.PathKernel)
	}
	return nil
}

// stage runs the ring as a pipeline (see pipeline): all of its workers
// copy one chunk's host bytes together, and the chunk's DMA is queued as
// soon as they are done, so that host copies of the next chunks overlap
// it. The workers are as many as the host's memory copy needs to feed the
// link (ringWorkers), one where a host destination's elements may share
// memory: there the chunks are scattered in order, part by part, so the
// last element in C order wins as in a plain loop; their DMA still
// overlaps. A ring the Copier sized fills its chunks in part when the
// copy is small (piece).
// It returns when every DMA has completed (pipeline.wait), and then records
// the copy's wall time, from the first chunk to the last DMA's
// completion, as the staged path's time in the ledger
// (accounting.Ledger.RecordCopy says why). On any failure the ring is
// freed, so nothing of it stays allocated.
func (j *job) stage(x *exec, d devarray.Ptr, host hostLayout, toDevice bool) (err error) {
	c := j.c
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	r, err := c.getRing(j.opt)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.dropRing())
		}
	}()
	// The DMAs go on the ring's streams, or, for a copy queued on a stream
	// of the caller's, on that stream, behind the work already queued
	// there: the host waits for none of it before gathering, and the
	// ring's streams carry nothing to wait for.
	streams := r.streams
	if x.s != nil {
		streams = []driver.Stream{x.s}
	}
	start := time.Now()
	workers := ringWorkers(j.opt.Profile, runtime.GOMAXPROCS(0))
	if !toDevice && !host.disjoint() {
		workers = 1
	}
	p := newPipeline(c, r, streams, d, host, toDevice, j.n, piece(j.n, r.chunk, j.opt.adapt), workers)
	p.run()
	errs := []error{p.err()}
	errs = append(errs, p.wait(errs[0] != nil))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Every DMA has completed: the ledger's time for the chunks it counted
	// (without their own times) is this copy's wall time.
	dir := accounting.DtoH
	if toDevice {
		dir = accounting.HtoD
	}
	c.dev.Ledger().RecordCopyTime(dir, accounting.PathStaged, time.Since(start))
	return nil
}
