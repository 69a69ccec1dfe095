package transfer

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
			if err := x.finishKernels(); err != nil { // the ring's streams must see the packed bytes
				return err
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

// stage runs the ring: goroutine g fills (or drains) chunk g, g+K, g+2K, …
// of the packed bytes through slot g, waiting on the slot's event before
// reusing it, so host copies of some chunks overlap the DMA of others.
// The K goroutines are the ring's depth, which the Copier sizes from the
// host's memory copy rate and GOMAXPROCS (sizeRing); a ring it sized
// fills its chunks in part when the copy is small (piece).
// It returns when every DMA has completed, and then records the copy's
// wall time, from the first chunk to the last DMA's completion, as the
// staged path's time in the ledger (accounting.Ledger.RecordCopy says
// why). On any failure the ring is freed, so nothing of it stays
// allocated.
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
	if x.s != nil {
		// Start after the work already queued on the caller's stream.
		if err := x.s.Synchronize(); err != nil {
			return err
		}
	}
	led := c.dev.Ledger()
	start := time.Now()
	size := piece(j.n, r.chunk, len(r.slots), j.opt.adapt)
	nchunks := int((j.n + size - 1) / size)
	errs := make([]error, len(r.slots))
	var failed atomic.Bool
	// A host destination whose elements may share memory takes the chunks'
	// scatters one after another, in order, so the last element in C order
	// wins; their DMA still overlaps.
	var order *chunkOrder
	if !toDevice && !host.disjoint() {
		order = newChunkOrder()
	}
	var wg sync.WaitGroup
	for g := range min(len(r.slots), nchunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, ev, slot := r.streams[g%len(r.streams)], r.events[g], r.slots[g].Bytes
			for ci := g; ci < nchunks && !failed.Load(); ci += len(r.slots) {
				lo := int64(ci) * size
				m := min(size, j.n-lo)
				var err error
				if toDevice {
					err = stageIn(led, st, ev, slot[:m], d+devarray.Ptr(lo), host, lo, ci >= len(r.slots))
				} else {
					err = stageOut(led, st, ev, slot[:m], d+devarray.Ptr(lo), host, lo, order.turn(ci))
				}
				if err != nil {
					errs[g] = fmt.Errorf("chunk %d: %w", ci, err)
					failed.Store(true)
					order.fail()
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range r.streams {
		errs = append(errs, s.Synchronize())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Every DMA has completed: the ledger's time for the chunks it counted
	// (without their own times) is this copy's wall time.
	dir := accounting.DtoH
	if toDevice {
		dir = accounting.HtoD
	}
	led.RecordCopyTime(dir, accounting.PathStaged, time.Since(start))
	return nil
}

// stageIn gathers one chunk into its slot, once the slot's last DMA is
// done, and queues its DMA to the device.
func stageIn(led *accounting.Ledger, st driver.Stream, ev driver.Event, slot []byte, d devarray.Ptr, host hostLayout, lo int64, reused bool) error {
	if reused {
		if err := ev.Synchronize(); err != nil {
			return err
		}
	}
	start := time.Now()
	host.gather(slot, lo)
	led.RecordCopy(accounting.HtoH, accounting.PathStaged, int64(len(slot)), time.Since(start))
	if err := st.CopyHtoDAsync(d, slot); err != nil {
		return err
	}
	return st.Record(ev)
}

// stageOut queues one chunk's DMA into its slot, waits for it and scatters
// the slot into host memory, within turn (see chunkOrder).
func stageOut(led *accounting.Ledger, st driver.Stream, ev driver.Event, slot []byte, d devarray.Ptr, host hostLayout, lo int64, turn chunkTurn) error {
	if err := st.CopyDtoHAsync(slot, d); err != nil {
		return err
	}
	if err := st.Record(ev); err != nil {
		return err
	}
	if err := ev.Synchronize(); err != nil {
		return err
	}
	if !turn.begin() {
		return errOtherChunkFailed
	}
	start := time.Now()
	host.scatter(slot, lo)
	took := time.Since(start)
	turn.end()
	led.RecordCopy(accounting.HtoH, accounting.PathStaged, int64(len(slot)), took)
	return nil
}
