package tomo

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// inFlight plans a method for depth runs at once: each run gets 1/depth of
// the memory, so that depth chunks, each with its own buffers and
// workspace, fit together where one chunk of the plan would.
type inFlight struct {
	plan.Method
	depth int
}

func (m inFlight) Name() string { return fmt.Sprintf("%s, %d in flight", m.Method.Name(), m.depth) }

func (m inFlight) MaxSlices(sliceDim int, other [2]int, dtype devarray.DType, available int64, p plan.Params) (int, devarray.DType, error) {
	return m.Method.MaxSlices(sliceDim, other, dtype, available/int64(m.depth), p)
}

// slot is one of the pipeline's chunks in flight: its stream, kernels that
// queue on it, its buffers (sized for the largest chunk) and workspace,
// and what it has in flight.
type slot struct {
	s         driver.Stream
	k         *kernels.Kernels // Async on s
	ws        *accounting.Workspace
	sino, img *devarray.DevArray
	begin     driver.Event // recorded on s before and after its chunk's kernels
	end       driver.Event
	chunk     int          // the chunk in it, -1: none
	timed     bool         // begin and end are recorded for chunk
	down      *transfer.Op // the download of chunk, queued after its kernels
}

// pipeline runs the Resident mode with depth chunks in flight on as many
// streams (Options.Streams): chunk k goes to slot k mod depth. For each
// chunk it waits for its upload (a staged copy runs on the copier's own
// streams, which the slot's stream does not wait for), queues the filter
// and the backprojection on the slot's stream, and then queues the
// download of the chunk before it (on that chunk's stream, after its
// kernels): so chunk k+1's upload and chunk k-1's download overlap chunk
// k's kernels. Every copy of a slot's buffers is ordered on the slot's
// stream, so a slot's buffers are reused only once the chunk before has
// left them. It records on each slot's stream events around the chunk's
// kernels, and gives in Result.KernelSeconds the time during which some
// chunk's kernels ran (the union of those intervals).
type pipeline struct {
	dev    driver.Device
	g      Geometry
	copier *transfer.Copier
	path   transfer.Path
	k      *kernels.Kernels
	slots  []*slot
	t0     driver.Event
	spans  [][2]time.Duration // the kernels' intervals from t0, of chunks done
	res    *Result
	prog   Progress
}

// runPipeline reconstructs every chunk of res.Plan with depth chunks in
// flight, with kernels k. It frees all it allocates, also on failure, after
// the work queued so far has completed.
func runPipeline(dev driver.Device, k *kernels.Kernels, res *Result, sinograms []float32, depth int, opt Options) (err error) {
	c, err := transfer.New(dev)
	if err != nil {
		return err
	}
	p := &pipeline{dev: dev, g: res.Geometry, copier: c, path: opt.Path, k: k, res: res, prog: opt.Progress}
	defer func() { err = errors.Join(err, p.close()) }()
	chunks := res.Plan.Chunks
	largest := 0
	for _, ch := range chunks {
		largest = max(largest, ch.Len)
	}
	if err := p.open(min(depth, len(chunks)), largest); err != nil {
		return err
	}
	for i, ch := range chunks {
		if err := p.step(i, sinograms); err != nil {
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
	res.KernelSeconds = union(p.spans).Seconds()
	return nil
}

// open makes the slots: streams, events, buffers for chunks of up to
// largest slices, workspaces.
func (p *pipeline) open(depth, largest int) error {
	g := p.g
	ev, err := p.dev.NewEvent()
	if err != nil {
		return err
	}
	p.t0 = ev
	for range depth {
		sl := &slot{chunk: -1}
		p.slots = append(p.slots, sl)
		if sl.s, err = p.dev.NewStream(); err != nil {
			return err
		}
		sl.k, sl.ws = p.k.Async(sl.s), accounting.NewWorkspace(p.dev)
		if sl.begin, err = p.dev.NewEvent(); err != nil {
			return err
		}
		if sl.end, err = p.dev.NewEvent(); err != nil {
			return err
		}
		if sl.sino, err = devarray.Empty(p.dev, DType, largest, g.Angles, g.Detectors()); err != nil {
			return err
		}
		if sl.img, err = devarray.Empty(p.dev, DType, largest, g.Size, g.Size); err != nil {
			return err
		}
	}
	return p.slots[0].s.Record(p.t0)
}

// step runs chunk i in slot i mod depth: its upload, queued on the slot's
// stream behind the download of the slot's chunk before (i - depth), is
// waited for (a staged copy runs on the copier's own streams, which the
// slot's stream does not wait for), and so that chunk is finished; then
// its kernels are queued, between the slot's events, and the download of
// chunk i-1 after that chunk's kernels on its stream (with one slot, chunk
// i's own).
func (p *pipeline) step(i int, sinograms []float32) error {
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
	in := sinograms[ch.Start*g.sinogramLen() : (ch.Start+ch.Len)*g.sinogramLen()]
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
	if err := sl.s.Record(sl.begin); err != nil {
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
	if err := sl.s.Record(sl.end); err != nil {
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
	// and the driver refuses to register a page twice: neighbouring chunks'
	// images share a page unless an image is a whole number of pages, so a
	// download on that path waits for the other slots' downloads first.
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
		b, err := sl.begin.Elapsed(p.t0)
		if err != nil {
			return err
		}
		e, err := sl.end.Elapsed(p.t0)
		if err != nil {
			return err
		}
		p.spans = append(p.spans, [2]time.Duration{b, e})
	}
	ch := p.res.Plan.Chunks[sl.chunk]
	sl.chunk, sl.down, sl.timed = -1, nil, false
	p.prog.report(string(Resident), ch.Start+ch.Len, p.g.Slices)
	return nil
}

// close waits for everything queued, then frees the slots and the copier.
func (p *pipeline) close() error {
	var errs []error
	for _, sl := range p.slots {
		if sl.down != nil {
			// a failed run's download: its error is the run's, or the stream's below
			errs = append(errs, sl.down.Wait())
		}
		if sl.s != nil {
			errs = append(errs, sl.s.Synchronize())
		}
	}
	for _, sl := range p.slots {
		for _, a := range []*devarray.DevArray{sl.sino, sl.img} {
			if a != nil {
				errs = append(errs, a.Free())
			}
		}
		if sl.ws != nil {
			errs = append(errs, sl.ws.Free())
		}
		for _, e := range []driver.Event{sl.begin, sl.end} {
			if e != nil {
				errs = append(errs, e.Close())
			}
		}
		if sl.s != nil {
			errs = append(errs, sl.s.Close())
		}
	}
	if p.t0 != nil {
		errs = append(errs, p.t0.Close())
	}
	errs = append(errs, p.copier.Close())
	return errors.Join(errs...)
}

// union is the total length of intervals, overlaps counted once.
func union(spans [][2]time.Duration) time.Duration {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b [2]time.Duration) int { return int(a[0] - b[0]) })
	var total, end time.Duration
	first := true
	for _, iv := range s {
		switch {
		case first || iv[0] >= end:
			total += iv[1] - iv[0]
			end, first = iv[1], false
		case iv[1] > end:
			total += iv[1] - end
			end = iv[1]
		}
	}
	return total
}
