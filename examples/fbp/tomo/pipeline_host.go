package tomo

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// runHost is the run on a path asked for (Options.Path): the copies take
// that path on the host's Go memory, which a staged or direct copy moves
// on the copier's own streams, so the host waits for each upload before
// it queues the chunk's kernels (step).
func (p *pipeline) runHost() error {
	chunks := p.res.Plan.Chunks
	if err := p.slots[0].s.Record(p.t0); err != nil {
		return err
	}
	for i, ch := range chunks {
		if err := p.step(i); err != nil {
			return fmt.Errorf("slices [%d, %d): %w", ch.Start, ch.Start+ch.Len, err)
		}
	}
	if n := len(chunks); n > 0 && len(p.slots) > 1 {
		if err := p.download(p.slots[(n-1)%len(p.slots)]); err != nil {
			return err
		}
	}
	for i := max(0, len(chunks)-len(p.slots)); i < len(chunks); i++ {
		if err := p.finish(p.slots[i%len(p.slots)]); err != nil {
			return err
		}
	}
	return nil
}

// step runs chunk i in slot i mod depth: its upload, queued on the slot's
// stream behind the download of the slot's chunk before (i - depth), is
// waited for (a staged copy runs on the copier's own streams, which the
// slot's stream does not wait for), and so that chunk is finished; then
// its kernels are queued, between the slot's events, and the download of
// chunk i-1 after that chunk's kernels on its stream (with one slot, chunk
// i's own).
func (p *pipeline) step(i int) error {
	g, ch := p.g, p.res.Plan.Chunks[i]
	sl := p.slots[i%len(p.slots)]
	sino, err := sl.sino.Slice(0, 0, ch.Len)
	if err != nil {
		return err
	}
	img, err := sl.img.Slice(0, 0, ch.Len)
	if err != nil {
		return err
	}
	in := p.sinograms[ch.Start*g.sinogramLen() : (ch.Start+ch.Len)*g.sinogramLen()]
	up, err := p.copier.CopyAsync(sl.s, transfer.Dev(sino), transfer.Host(in, ch.Len, g.Angles, g.Detectors()), transfer.Via(p.path))
	if err != nil {
		return err
	}
	if err := up.Wait(); err != nil {
		return err
	}
	if err := p.finish(sl); err != nil {
		return err
	}
	sl.chunk = i
	if err := p.filterAndProject(sl, sino, img, sl.begin, sl.end); err != nil {
		return err
	}
	sl.timed = true
	switch {
	case len(p.slots) == 1:
		return p.download(sl)
	case i > 0:
		return p.download(p.slots[(i-1)%len(p.slots)])
	}
	return nil
}

// download queues the download of the slot's chunk on its stream, after its
// kernels.
func (p *pipeline) download(sl *slot) error {
	g, ch := p.g, p.res.Plan.Chunks[sl.chunk]
	img, err := sl.img.Slice(0, 0, ch.Len)
	if err != nil {
		return err
	}
	out := p.res.Volume[ch.Start*g.imageLen() : (ch.Start+ch.Len)*g.imageLen()]
	dst, src := transfer.Host(out, ch.Len, g.Size, g.Size), transfer.Dev(img)
	// A copy on the registered path registers the pages of its host bytes,
	// and the copier's registration cache works in whole pages and refuses
	// ranges that overlap one in use: neighbouring chunks' images share a
	// page unless an image is a whole number of pages, so a download on
	// that path waits for the other slots' downloads first.
	if c, err := p.copier.Plan(dst, src, transfer.Via(p.path)); err == nil && c.Path == transfer.PathRegistered {
		for _, o := range p.slots {
			if o != sl && o.down != nil {
				if err := o.down.Wait(); err != nil {
					return err
				}
			}
		}
	}
	sl.down, err = p.copier.CopyAsync(sl.s, dst, src, transfer.Via(p.path))
	return err
}

// finish waits for the slot's chunk, if it has one, to be done (its
// download complete), reads its kernels' interval and reports it to
// Progress; the slot is then free. Chunks finish in order.
func (p *pipeline) finish(sl *slot) error {
	if sl.chunk < 0 {
		return nil
	}
	if sl.down == nil {
		return fmt.Errorf("tomo: chunk %d finished before its download was queued: %w", sl.chunk, driver.ErrInvalidValue)
	}
	if err := sl.down.Wait(); err != nil {
		return err
	}
	if sl.timed {
		if err := p.addSpan(sl.begin, sl.end); err != nil {
			return err
		}
	}
	ch := p.res.Plan.Chunks[sl.chunk]
	sl.chunk, sl.down, sl.timed = -1, nil, false
	p.prog.report(string(Resident), ch.Start+ch.Len, p.g.Slices)
	return nil
}

// filterAndProject queues a chunk's kernels on its slot's stream between
// the records of begin and end: the ramp filter of sino in place (a
// filter that ran in several passes for want of workspace marks the run
// Degraded) and the backprojection into img.
func (p *pipeline) filterAndProject(sl *slot, sino, img *devarray.DevArray, begin, end driver.Event) error {
	if err := sl.s.Record(begin); err != nil {
		return err
	}
	ferr := sl.k.RampFilter(sino, sl.ws)
	if errors.Is(ferr, accounting.ErrPerfDegraded) {
		p.res.Degraded, ferr = true, nil
	}
	if ferr != nil {
		return ferr
	}
	if err := sl.k.Backproject(img, sino, sl.ws); err != nil {
		return err
	}
	return sl.s.Record(end)
}
