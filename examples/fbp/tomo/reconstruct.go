package tomo

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// Mode is how Reconstruct moves a chunk between its two steps.
type Mode string

const (
	// Resident keeps a chunk on the device from the sinograms' upload to
	// the images' download: filter and backprojection run back to back on
	// it (kernels.ReconstructMethod).
	Resident Mode = "resident"
	// Staged runs the filter and the backprojection as two steps that each
	// take their input from the host and give their output back to it
	// (kernels.FilterMethod, then kernels.BackprojectMethod).
	Staged Mode = "staged"
)

// Modes are the modes, in the order the example runs them.
var Modes = []Mode{Resident, Staged}

// ParseMode parses "resident" or "staged".
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("tomo: mode %q: want resident or staged", s)
}

// Result is one reconstruction.
type Result struct {
	Mode     Mode      `json:"mode"`
	Memory   Memory    `json:"memory"`
	Geometry Geometry  `json:"geometry"`
	Volume   []float32 `json:"-"` // (Slices, Size, Size)
	Plan     plan.Plan `json:"plan"`
	// Seconds is the run's time on the clock. A pipelined run (Streams >=
	// 2) and a run in managed memory start the clock once all they need is
	// made and stop it before they free any of it: the clock times the
	// work (PrepareSeconds is the rest). Other runs time all they do.
	Seconds float64 `json:"seconds"`
	// PrepareSeconds is, in a pipelined run, the time before the clock
	// started: the copier, streams, events, device buffers and workspaces
	// made, the volume's pages touched, and with the transfer path left to
	// choose the sinograms and the volume page-locked; in a run in managed
	// memory, the managed arrays, streams, events and workspaces made and
	// the sinograms' pages populated on the host.
	PrepareSeconds float64 `json:"prepare_seconds"`
	// Streams is the chunks that were in flight at once (Options.Streams).
	Streams int `json:"streams"`
	// KernelSeconds is, in a pipelined run (Streams >= 2) and in a run in
	// managed memory, the time during which the filter and backprojection
	// kernels of some chunk ran, from events recorded around them on their
	// streams (overlaps counted once); 0 where it was not measured. Seconds / KernelSeconds is how close the
	// run comes to the pace of its kernels.
	KernelSeconds float64 `json:"kernel_seconds"`
	Traffic       Traffic `json:"ledger"`
	// Degraded: the ramp filter ran in several passes, as the workspace
	// had no room for one (accounting.ErrPerfDegraded): right, but slower.
	Degraded bool `json:"degraded"`
	// NotPageLocked is, in a pipelined run with the transfer path left to
	// choose, why the host's sinograms or volume could not be page-locked
	// (memory the caller or another run holds page-locked already): the
	// run then let the copier's planner choose each copy, the host driving
	// them. Empty when they were page-locked, or not asked for.
	NotPageLocked string `json:"not_page_locked,omitempty"`
}

// DefaultStreams is the chunks a Resident reconstruction keeps in flight
// unless Options.Streams says otherwise.
const DefaultStreams = 2

// MaxStreams is the most chunks in flight Options.Streams may ask for.
const MaxStreams = 8

// ChunksPerStream is what a pipelined run's default MinChunks is per
// stream: with 2 streams, at least 8 chunks, so that the copies that
// overlap no kernels are an eighth of the sinograms up and of the volume
// down.
const ChunksPerStream = 4

// Options tune ReconstructWith.
type Options struct {
	// Streams is how many chunks of a Resident run are in flight at once,
	// each on a stream of its own with its own device buffers and
	// workspace, so that one chunk's upload and another's download overlap
	// a third's kernels: 0 means DefaultStreams; 1 runs one chunk after the
	// other, each step synchronous (the unpipelined run). The plan gives
	// each chunk in flight 1/Streams of the memory. Staged ignores it.
	Streams int
	// MinChunks is the fewest chunks a pipelined run (Streams >= 2) is cut
	// into, however few the memory needs: a chunk's upload and download
	// overlap other chunks' kernels, but the first upload and the last
	// download overlap nothing, so the more chunks the less of the copies
	// shows. 0 means ChunksPerStream × Streams; never more than the slices.
	MinChunks int
	// Path is the transfer path of the chunks' copies between the host's
	// arrays and the device (transfer.Via). PathAuto, the default: a
	// pipelined run page-locks the sinograms and the volume for the run
	// (pinned.Register, before its clock) and DMAs each chunk from and to
	// them; where it cannot (memory the caller holds page-locked already,
	// or that another run holds: Result.NotPageLocked says why), it lets
	// the copier's planner choose for each copy, as an unpipelined run does.
	Path transfer.Path
	// Memory is where a Resident run keeps the sinograms and the volume:
	// DeviceMemory (also "") or ManagedMemory. Staged takes only
	// DeviceMemory: it moves each step's data through the host by copies,
	// which is what it is there to show.
	Memory Memory
	// Progress is told after each chunk; it may be nil.
	Progress Progress
}

// Reconstruct runs filtered backprojection on sinograms, (Slices, Angles,
// Size) float32 on the host, in mode, in the chunks that plan.ForDevice
// picks for kernels.ReconstructMethod on dev, and returns the volume on the
// host with the time it took and the ledger's counts for it. It frees all
// it allocates on the device, also on failure. A Resident run keeps
// DefaultStreams chunks in flight (ReconstructWith).
func Reconstruct(dev driver.Device, g Geometry, sinograms []float32, mode Mode, progress Progress) (*Result, error) {
	return ReconstructWith(dev, g, sinograms, mode, Options{Progress: progress})
}

// ReconstructWith is Reconstruct with options. Every choice of Streams
// and Memory gives the same volume, bit for bit, as Staged does.
func ReconstructWith(dev driver.Device, g Geometry, sinograms []float32, mode Mode, opt Options) (*Result, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	if want := g.Slices * g.sinogramLen(); len(sinograms) != want {
		return nil, fmt.Errorf("tomo: %d sinogram values for %v: want %d: %w", len(sinograms), g, want, devarray.ErrShape)
	}
	streams := opt.Streams
	switch {
	case streams == 0:
		streams = DefaultStreams
	case streams < 0 || streams > MaxStreams:
		return nil, fmt.Errorf("tomo: %d streams: want 1 to %d, or 0 for %d: %w", streams, MaxStreams, DefaultStreams, accounting.ErrInvalidArgument)
	}
	if mode != Resident {
		streams = 1
	}
	memory := cmp.Or(opt.Memory, DeviceMemory)
	if _, err := ParseMemory(string(memory)); err != nil {
		return nil, fmt.Errorf("%w: %w", err, accounting.ErrInvalidArgument)
	}
	if memory == ManagedMemory {
		if mode != Resident {
			return nil, fmt.Errorf("tomo: %s mode in managed memory: the staged mode moves each step's data through the host by copies, by design; managed memory is for the resident mode: %w", mode, accounting.ErrInvalidArgument)
		}
		return reconstructManaged(dev, g, sinograms, streams, opt)
	}
	p, err := planChunks(dev, g, streams, opt.MinChunks)
	if err != nil {
		return nil, fmt.Errorf("tomo: %s reconstruction of %v: %w", mode, g, err)
	}
	res := &Result{Mode: mode, Memory: memory, Geometry: g, Plan: p, Streams: streams, Volume: make([]float32, g.Slices*g.imageLen())}
	var k *kernels.Kernels
	if streams > 1 {
		// loaded before the clock starts, as the methods' kernels are loaded
		// once per device (on a GPU, loading the module takes milliseconds)
		if k, err = kernels.New(dev); err != nil {
			return nil, fmt.Errorf("tomo: %s reconstruction of %v: %w", mode, g, err)
		}
	}
	snap, err := dev.Ledger().Measure("tomo "+string(mode), func() error {
		if streams > 1 {
			return runPipeline(dev, k, res, sinograms, streams, opt)
		}
		return timed(res, func() error {
			c, err := transfer.New(dev)
			if err != nil {
				return err
			}
			r := &runner{env: plan.Env{Dev: dev, Workspace: accounting.NewWorkspace(dev)}, copier: c, path: opt.Path}
			err = r.chunks(res, sinograms, opt.Progress)
			res.Degraded = r.degraded
			return errors.Join(err, r.env.Workspace.Free(), c.Close())
		})
	})
	res.Traffic = trafficOf(snap)
	if k != nil {
		err = errors.Join(err, k.Close())
	}
	if err != nil {
		return nil, fmt.Errorf("tomo: %s reconstruction of %v: %w", mode, g, err)
	}
	return res, nil
}

// planChunks plans a Resident or Staged run with streams chunks in flight
// (Options.Streams) in the memory the device has now: each chunk in flight
// needs room for its sinograms, its images and its workspace. A pipelined
// run (streams >= 2) is cut into at least minChunks chunks (0:
// ChunksPerStream × streams), never more than the slices.
func planChunks(dev driver.Device, g Geometry, streams, minChunks int) (plan.Plan, error) {
	if minChunks < 0 {
		return plan.Plan{}, fmt.Errorf("%d chunks at least: want 0 or more: %w", minChunks, accounting.ErrInvalidArgument)
	}
	m := kernels.ReconstructMethod
	if streams > 1 {
		m = inFlight{Method: m, depth: streams}
	}
	p, err := plan.ForDevice(dev, m, g.SinogramShape(), 0, DType, g.params())
	if err != nil {
		return p, err
	}
	if streams > 1 {
		least := minChunks
		if least == 0 {
			least = ChunksPerStream * streams
		}
		if n := min(least, g.Slices); n > len(p.Chunks) {
			p.Chunks = evenChunks(g.Slices, n)
		}
	}
	return p, nil
}

// evenChunks cuts total slices into n runs, as even as can be (plan.Chunks
// does the same).
func evenChunks(total, n int) []plan.Chunk {
	out := make([]plan.Chunk, 0, n)
	base, extra, start := total/n, total%n, 0
	for i := range n {
		l := base
		if i < extra {
			l++
		}
		out = append(out, plan.Chunk{Start: start, Len: l})
		start += l
	}
	return out
}

// chunks reconstructs every chunk of res.Plan.
func (r *runner) chunks(res *Result, sinograms []float32, progress Progress) error {
	g := res.Geometry
	volSlice, sinoSlice := g.imageLen(), g.sinogramLen()
	for _, ch := range res.Plan.Chunks {
		lo, hi := ch.Start, ch.Start+ch.Len
		sino, vol := sinograms[lo*sinoSlice:hi*sinoSlice], res.Volume[lo*volSlice:hi*volSlice]
		shape := [3]int{ch.Len, g.Angles, g.Detectors()}
		var err error
		switch res.Mode {
		case Resident:
			err = r.onDevice(kernels.ReconstructMethod, sino, shape, vol, g.params())
		case Staged:
			filtered := make([]float32, len(sino)) // a fresh host array per step, as code built on host arrays makes
			err = r.onDevice(kernels.FilterMethod, sino, shape, filtered, nil)
			if err == nil {
				err = r.onDevice(kernels.BackprojectMethod, filtered, shape, vol, g.params())
			}
		}
		if err != nil {
			return fmt.Errorf("slices [%d, %d): %w", lo, hi, err)
		}
		progress.report(string(res.Mode), hi, g.Slices)
	}
	return nil
}
