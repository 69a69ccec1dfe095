package tomo

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// chunkEvents are the events of one chunk's steps, each recorded on the
// stream of its step: its upload done, its kernels' start and end, its
// download done.
type chunkEvents struct {
	up, begin, end, down driver.Event
}

func (e chunkEvents) all() []driver.Event { return []driver.Event{e.up, e.begin, e.end, e.down} }

// openEvents makes the event-ordered run's two copy streams and each
// chunk's events; with the host's sinograms and volume page-locked
// (lockHost), the chunks' copies are DMA from and to them, queued on a
// stream without a host wait and without a memory copy through staging
// buffers. The caller's close frees what it made, also when it fails
// half-way.
func (p *pipeline) openEvents() error {
	var err error
	if p.up, err = p.dev.NewStream(); err != nil {
		return err
	}
	if p.down, err = p.dev.NewStream(); err != nil {
		return err
	}
	return p.openChunkEvents()
}

// openChunkEvents makes each chunk's events. The caller's close closes
// them, also when it fails half-way.
func (p *pipeline) openChunkEvents() error {
	for range p.res.Plan.Chunks {
		var e chunkEvents
		for _, ev := range []*driver.Event{&e.up, &e.begin, &e.end, &e.down} {
			var err error
			if *ev, err = p.dev.NewEvent(); err != nil {
				p.evs = append(p.evs, e)
				return err
			}
		}
		p.evs = append(p.evs, e)
	}
	return nil
}

// lockHost page-locks the host's sinograms and volume (cuMemHostRegister,
// through pinned.Register) and reports whether both are. Memory that is
// page-locked already (the caller's pinned buffers, another run's
// arrays) cannot be registered again: then nothing stays registered, the
// reason is kept in Result.NotPageLocked, and the run lets the copier's planner
// choose each copy's path, as a host-driven pipeline.
func (p *pipeline) lockHost() bool {
	var err error
	if p.sinoHost, err = pinned.Register(p.dev, floatBytes(p.sinograms), 0); err != nil {
		p.sinoHost, p.res.NotPageLocked = nil, fmt.Sprintf("page-lock the sinograms: %v", err)
		return false
	}
	if p.volHost, err = pinned.Register(p.dev, floatBytes(p.res.Volume), 0); err != nil {
		p.volHost, p.res.NotPageLocked = nil, fmt.Sprintf("page-lock the volume: %v", err)
		if uerr := p.sinoHost.Unregister(); uerr != nil {
			p.res.NotPageLocked += fmt.Sprintf("; unregister the sinograms: %v", uerr)
		}
		p.sinoHost = nil
		return false
	}
	return true
}

// closeEvents closes what openEvents made and lets go of the host's
// memory; the caller has waited for the work queued.
func (p *pipeline) closeEvents() error {
	var errs []error
	for _, e := range p.evs {
		for _, ev := range e.all() {
			if ev != nil {
				errs = append(errs, ev.Close())
			}
		}
	}
	for _, s := range []driver.Stream{p.up, p.down} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	for _, b := range []*pinned.Buffer{p.sinoHost, p.volHost} {
		if b != nil {
			errs = append(errs, b.Unregister())
		}
	}
	return errors.Join(errs...)
}

// runEvents queues every chunk (queue), then waits for their downloads in
// order (settle).
func (p *pipeline) runEvents() error {
	if err := p.up.Record(p.t0); err != nil {
		return err
	}
	chunks := p.res.Plan.Chunks
	for i, ch := range chunks {
		if err := p.queue(i); err != nil {
			return fmt.Errorf("slices [%d, %d): %w", ch.Start, ch.Start+ch.Len, err)
		}
	}
	for i, ch := range chunks {
		if err := p.settle(i); err != nil {
			return fmt.Errorf("slices [%d, %d): %w", ch.Start, ch.Start+ch.Len, err)
		}
	}
	var errs []error
	for _, op := range p.ops {
		errs = append(errs, op.Wait())
	}
	p.ops = nil
	return errors.Join(errs...)
}

// queue queues chunk i in slot i mod depth, the host waiting for nothing:
// its upload on the upload stream, once the slot's chunk before (i -
// depth) has been backprojected (its sinograms are filtered in place and
// read by the backprojection); its kernels on the slot's stream, once its
// upload is done and the chunk before has left the slot's image buffer;
// its download on the download stream, once its kernels are done. A
// stream waits for an event as it was recorded when the wait is queued.
func (p *pipeline) queue(i int) error {
	g, ch := p.g, p.res.Plan.Chunks[i]
	sl, e := p.slots[i%len(p.slots)], p.evs[i]
	sino, err := sl.sino.Slice(0, 0, ch.Len)
	if err != nil {
		return err
	}
	img, err := sl.img.Slice(0, 0, ch.Len)
	if err != nil {
		return err
	}
	var before *chunkEvents
	if i >= len(p.slots) {
		before = &p.evs[i-len(p.slots)]
	}
	if before != nil {
		if err := p.up.WaitEvent(before.end); err != nil {
			return err
		}
	}
	sinoStride, imgStride := g.SinogramSliceBytes(), g.SliceBytes()
	src := transfer.Pinned(p.sinoHost, DType, ch.Len, g.Angles, g.Detectors()).
		Strided(int64(ch.Start)*sinoStride, sinoStride, int64(g.Detectors())*DType.Size(), DType.Size())
	if err := p.copyAsync(p.up, transfer.Dev(sino), src); err != nil {
		return err
	}
	if err := p.up.Record(e.up); err != nil {
		return err
	}
	if err := sl.s.WaitEvent(e.up); err != nil {
		return err
	}
	if before != nil {
		if err := sl.s.WaitEvent(before.down); err != nil {
			return err
		}
	}
	if err := p.filterAndProject(sl, sino, img, e.begin, e.end); err != nil {
		return err
	}
	if err := p.down.WaitEvent(e.end); err != nil {
		return err
	}
	dst := transfer.Pinned(p.volHost, DType, ch.Len, g.Size, g.Size).
		Strided(int64(ch.Start)*imgStride, imgStride, int64(g.Size)*DType.Size(), DType.Size())
	if err := p.copyAsync(p.down, dst, transfer.Dev(img)); err != nil {
		return err
	}
	return p.down.Record(e.down)
}

// copyAsync queues a copy between page-locked host memory and the device
// on s, and keeps its Op to wait for.
func (p *pipeline) copyAsync(s driver.Stream, dst, src transfer.Endpoint) error {
	op, err := p.copier.CopyAsync(s, dst, src)
	if err != nil {
		return err
	}
	p.ops = append(p.ops, op)
	return nil
}

// settle waits for chunk i's download, reads its kernels' interval and
// reports the chunk to Progress.
func (p *pipeline) settle(i int) error {
	e := p.evs[i]
	if err := e.down.Synchronize(); err != nil {
		return err
	}
	if err := p.addSpan(e.begin, e.end); err != nil {
		return err
	}
	ch := p.res.Plan.Chunks[i]
	p.prog.report(string(Resident), ch.Start+ch.Len, p.g.Slices)
	return nil
}
