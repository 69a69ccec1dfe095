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
	"github.com/cuarray/cuarray/pinned"
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
// queue on it, its buffers (sized for the largest chunk) and workspace
// (sized for them), and, on a path the host drives (pipeline_host.go),
// what it has in flight.
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
// streams (Options.Streams): chunk k goes to slot k mod depth. openPipeline
// makes all it needs before the clock starts (run times only the work),
// and close frees it after the clock has stopped.
//
// With the transfer path left to choose (PathAuto), the host's sinograms
// and volume are page-locked before the clock, and every step of every
// chunk is queued at once, ordered by events (pipeline_events.go): the
// uploads on a stream of their own, each chunk's kernels on its slot's
// stream, the downloads on another, so that uploads, downloads and kernels
// overlap wherever the data allows, and the host waits only for the
// downloads, in order, to report progress. With a path asked for
// (Options.Path), the copies take that path on the host's Go memory, and
// the host waits for each upload (pipeline_host.go); the staged path's
// ring is made before the clock too (transfer.Copier.Reserve).
//
// It records events around each chunk's kernels, and gives in
// Result.KernelSeconds the time during which some chunk's kernels ran (the
// union of those intervals).
type pipeline struct {
	dev       driver.Device
	g         Geometry
	copier    *transfer.Copier
	path      transfer.Path
	k         *kernels.Kernels
	slots     []*slot
	t0        driver.Event
	spans     [][2]time.Duration // the kernels' intervals from t0, of chunks done
	res       *Result
	sinograms []float32
	prog      Progress

	// the run ordered by events (PathAuto), pipeline_events.go
	up, down          driver.Stream  // the uploads' and the downloads' streams
	evs               []chunkEvents  // one set per chunk
	sinoHost, volHost *pinned.Buffer // the host's sinograms and volume, page-locked
	// byEvents: the host's arrays are page-locked and every chunk is
	// queued at once, ordered by events; else the host drives each copy.
	byEvents bool
	ops      []*transfer.Op // the copies queued, waited for before close frees their memory

	// the run in managed memory (ManagedMemory), managed.go: the chunks
	// are views of these arrays, and no copy is queued
	managed *managedVolume
}

// runPipeline reconstructs every chunk of res.Plan with depth chunks in
// flight, with kernels k: it makes what the run needs, then runs it with
// the clock running (timed sets res.Seconds), then frees it all, also on
// failure, after the work queued so far has completed.
func runPipeline(dev driver.Device, k *kernels.Kernels, res *Result, sinograms []float32, depth int, opt Options) error {
	start := time.Now()
	p, err := openPipeline(dev, k, res, sinograms, depth, opt)
	res.PrepareSeconds = time.Since(start).Seconds()
	if err != nil {
		return err
	}
	err = timed(res, p.run)
	return errors.Join(err, p.close())
}

// openPipeline makes all a run needs before its clock starts: the copier,
// the slots (streams, buffers for chunks of up to the largest chunk's
// slices, workspaces sized for them), events, and the volume's pages
// (touched, so that no download faults them in); with PathAuto it also
// page-locks the sinograms and the volume and makes the event-ordered
// run's streams and events. A failure half-way frees what it made.
func openPipeline(dev driver.Device, k *kernels.Kernels, res *Result, sinograms []float32, depth int, opt Options) (*pipeline, error) {
	c, err := transfer.New(dev)
	if err != nil {
		return nil, err
	}
	p := &pipeline{dev: dev, g: res.Geometry, copier: c, path: opt.Path, k: k, res: res, sinograms: sinograms, prog: opt.Progress}
	largest := 0
	for _, ch := range res.Plan.Chunks {
		largest = max(largest, ch.Len)
	}
	if err := p.open(min(depth, len(res.Plan.Chunks)), largest); err != nil {
		return nil, errors.Join(err, p.close())
	}
	return p, nil
}

// run is the timed work: every chunk, on the path's pipeline.
func (p *pipeline) run() error {
	var err error
	switch {
	case p.managed != nil:
		err = p.runManaged()
	case p.byEvents:
		err = p.runEvents()
	default:
		err = p.runHost()
	}
	if err != nil {
		return err
	}
	p.res.KernelSeconds = union(p.spans).Seconds()
	return nil
}

// open makes the slots and the run's events and streams, and readies the
// host's memory; on the staged path it reserves the copier's ring. A run
// in managed memory has no buffers of its own: its slots' workspaces are
// sized for views of the managed arrays, and it has per chunk the events
// of an event-ordered run, but no copy streams.
func (p *pipeline) open(depth, largest int) error {
	g := p.g
	if p.path == transfer.PathAuto && p.managed == nil {
		p.byEvents = p.lockHost()
	}
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
		if p.managed != nil {
			sino, img, err := p.managed.chunk(0, largest)
			if err != nil {
				return err
			}
			if err := p.sizeWorkspace(sl, sino, img); err != nil {
				return err
			}
			continue
		}
		if !p.byEvents {
			if sl.begin, err = p.dev.NewEvent(); err != nil {
				return err
			}
			if sl.end, err = p.dev.NewEvent(); err != nil {
				return err
			}
		}
		if sl.sino, err = devarray.Empty(p.dev, DType, largest, g.Angles, g.Detectors()); err != nil {
			return err
		}
		if sl.img, err = devarray.Empty(p.dev, DType, largest, g.Size, g.Size); err != nil {
			return err
		}
		if err := p.sizeWorkspace(sl, sl.sino, sl.img); err != nil {
			return err
		}
	}
	if p.managed != nil {
		return p.openChunkEvents()
	}
	touchPages(p.res.Volume)
	switch {
	case p.byEvents:
		return p.openEvents()
	case p.path == transfer.PathStaged:
		return p.copier.Reserve() // the ring's pinned chunks and streams, which the first copy would make
	}
	return nil
}

// sizeWorkspace allocates the slot's workspace for what its kernels need
// on sino and img (its buffers, or views of the largest chunk), asked of
// the kernels themselves (a size query), so that no kernel grows it while
// the clock runs. On a device too full for it, it takes the least the
// kernels run in (the ramp filter one row at a time), as a workspace that
// cannot grow does: the filter then falls back to its slower algorithm
// (accounting.ErrPerfDegraded).
func (p *pipeline) sizeWorkspace(sl *slot, sino, img *devarray.DevArray) error {
	if err := sl.ws.StartQuery(); err != nil {
		return err
	}
	for _, query := range []func() error{
		func() error { return p.k.RampFilter(sino, sl.ws) },
		func() error { return p.k.Backproject(img, sino, sl.ws) },
	} {
		if err := query(); err != nil && !accounting.IsSizeQuery(err) {
			_, _ = sl.ws.StopQuery()
			return err
		}
	}
	_, err := sl.ws.Preallocate()
	if errors.Is(err, accounting.ErrOutOfMemory) {
		least := max(kernels.RampFilterWorkspace(1, p.g.Detectors(), DType.Size()), kernels.BackprojectWorkspace(p.g.Angles, DType.Size()))
		err = sl.ws.SetManual(least)
	}
	return err
}

// close waits for everything queued, then frees the slots, the run's
// streams and events, the copier, and lets go of the host's memory.
func (p *pipeline) close() error {
	var errs []error
	for _, op := range p.ops {
		// a failed run's copy: its error is the run's, or the stream's below
		errs = append(errs, op.Wait())
	}
	for _, sl := range p.slots {
		if sl.down != nil {
			errs = append(errs, sl.down.Wait())
		}
		if sl.s != nil {
			errs = append(errs, sl.s.Synchronize())
		}
	}
	for _, s := range []driver.Stream{p.up, p.down} {
		if s != nil {
			errs = append(errs, s.Synchronize())
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
	errs = append(errs, p.closeEvents())
	if p.t0 != nil {
		errs = append(errs, p.t0.Close())
	}
	if p.copier != nil { // a run in managed memory has none
		errs = append(errs, p.copier.Close())
	}
	return errors.Join(errs...)
}

// addSpan adds a chunk's kernels' interval, from t0 to its begin and end
// events, to the spans.
func (p *pipeline) addSpan(begin, end driver.Event) error {
	b, err := begin.Elapsed(p.t0)
	if err != nil {
		return err
	}
	e, err := end.Elapsed(p.t0)
	if err != nil {
		return err
	}
	p.spans = append(p.spans, [2]time.Duration{b, e})
	return nil
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
