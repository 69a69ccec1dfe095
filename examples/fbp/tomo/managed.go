package tomo

import (
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// managedVolume is a run's whole sinogram stack and whole volume in
// managed memory (ManagedMemory), which its chunks are views of.
type managedVolume struct {
	sino, vol *devarray.DevArray
	// toDevice: the device takes prefetches to it (it has concurrent
	// managed access); elsewhere a chunk's kernels fault its pages in.
	toDevice bool
	here     driver.Location // the device, as prefetches name it
}

// newManagedVolume allocates the sinograms and the volume of g in
// managed memory, attached globally (any stream may touch them).
func newManagedVolume(dev driver.Device, g Geometry) (*managedVolume, error) {
	m := &managedVolume{toDevice: dev.ConcurrentManagedAccess(), here: driver.Location(dev.DeviceID().Ordinal)}
	var err error
	s := g.SinogramShape()
	if m.sino, err = devarray.EmptyManaged(dev, devarray.AttachGlobal, DType, s[:]...); err != nil {
		return nil, err
	}
	v := g.VolumeShape()
	if m.vol, err = devarray.EmptyManaged(dev, devarray.AttachGlobal, DType, v[:]...); err != nil {
		return nil, errors.Join(err, m.sino.Free())
	}
	return m, nil
}

// chunk returns the views of slices [lo, hi) of the sinograms and the
// volume.
func (m *managedVolume) chunk(lo, hi int) (sino, img *devarray.DevArray, err error) {
	if sino, err = m.sino.Slice(0, lo, hi); err != nil {
		return nil, nil, err
	}
	if img, err = m.vol.Slice(0, lo, hi); err != nil {
		return nil, nil, err
	}
	return sino, img, nil
}

// free frees both arrays.
func (m *managedVolume) free() error { return errors.Join(m.sino.Free(), m.vol.Free()) }

// reconstructManaged is a Resident run in managed memory: the sinograms
// and the volume, whole, live in managed memory (devarray.EmptyManaged),
// and each chunk's kernels run in place on views of them, on its slot's
// stream as in a pipelined run (Options.Streams chunks in flight; 1: one
// after the other). No copy call moves them: the host writes the
// sinograms into the managed array and reads the volume out of the other
// in place (HostView), and the driver moves the pages. On a device with
// concurrent managed access, each chunk's sinograms and images are
// prefetched to the device on its stream before its kernels, and its
// images to the host after them, so that neither the kernels nor the
// host's read take a page fault; the filtered sinograms, which no one
// reads again, are left where they are: the driver evicts them as later
// chunks move in where the device is full (an eviction writes a page
// back, as a prefetch to the host would). So the two arrays may be larger
// than the device's memory. A device without concurrent managed access
// takes no prefetch to it: its kernels fault each page in.
//
// The plan is the device-memory run's: each chunk in flight needs its
// sinograms, its images and its workspace on the device at once, whether
// its pages are managed or not; the arrays themselves need not fit.
// Result.Traffic.Managed has the bytes the driver moved, by path, and the
// page faults, evictions and read duplicates the ledger counted during the
// run. The clock times the host's write of the sinograms, the chunks and
// the host's read of the volume; PrepareSeconds the rest. It frees all it
// allocates, also on failure. The volume is the one a run in device
// memory gives for the same sinograms, bit for bit.
func reconstructManaged(dev driver.Device, g Geometry, sinograms []float32, streams int, opt Options) (*Result, error) {
	k, err := kernels.New(dev)
	if err != nil {
		return nil, fmt.Errorf("tomo: resident reconstruction of %v in managed memory: %w", g, err)
	}
	res := &Result{Mode: Resident, Memory: ManagedMemory, Geometry: g, Streams: streams, Volume: make([]float32, g.Slices*g.imageLen())}
	led := dev.Ledger()
	before := led.Managed()
	snap, err := led.Measure("tomo resident, managed memory", func() error {
		return runManagedVolume(dev, k, res, sinograms, streams, opt)
	})
	res.Traffic = trafficOf(snap)
	res.Traffic.Managed = managedTrafficOf(snap, before, led.Managed())
	if err = errors.Join(err, k.Close()); err != nil {
		return nil, fmt.Errorf("tomo: resident reconstruction of %v in managed memory: %w", g, err)
	}
	return res, nil
}

// runManagedVolume allocates the managed arrays, plans the chunks in the
// memory left (beside the arrays where they take device memory: on a
// device without concurrent managed access), makes the pipeline's slots
// and events, populates the sinograms' pages on the host; then, with the
// clock running, writes the sinograms, runs every chunk and reads the
// volume; then frees it all.
func runManagedVolume(dev driver.Device, k *kernels.Kernels, res *Result, sinograms []float32, depth int, opt Options) (err error) {
	g, start := res.Geometry, time.Now()
	mv, err := newManagedVolume(dev, g)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, mv.free()) }()
	if res.Plan, err = planChunks(dev, g, depth, opt.MinChunks); err != nil {
		return fmt.Errorf("each chunk in flight needs its sinograms, images and workspace on the device at once (the arrays need not fit): %w", err)
	}
	p := &pipeline{dev: dev, g: g, k: k, res: res, prog: opt.Progress, managed: mv}
	largest := 0
	for _, ch := range res.Plan.Chunks {
		largest = max(largest, ch.Len)
	}
	err = p.open(min(depth, len(res.Plan.Chunks)), largest)
	if err == nil {
		err = mv.populate(p.slots[0].s)
	}
	res.PrepareSeconds = time.Since(start).Seconds()
	if err == nil {
		err = timed(res, func() error { return p.inPlace(sinograms) })
	}
	return errors.Join(err, p.close())
}

// populate prefetches the sinograms' pages, never touched yet, to the
// host, where the host writes them next, and waits for it: "If no
// physical memory has been allocated for this region, then this memory
// region will be populated and mapped on the destination device"
// (cuMemPrefetchAsync), so the host's first write takes no page fault.
// The volume's pages are populated where its chunks' kernels write them.
func (m *managedVolume) populate(s driver.Stream) error {
	if err := s.Prefetch(m.sino.Ptr(), m.sino.NBytes(), driver.HostLocation); err != nil {
		return err
	}
	return s.Synchronize()
}

// inPlace is the timed work of a run in managed memory: the host writes
// the sinograms into their managed array, every chunk runs on it, and
// the host reads the volume out of its own once the device is done
// (synchronized: a device without concurrent managed access lets the host
// touch managed memory only then; on a GPU, the cuda backend counts the
// driver's migrations at a synchronization).
func (p *pipeline) inPlace(sinograms []float32) error {
	in, err := p.managed.sino.HostView(true)
	if err != nil {
		return err
	}
	copy(in, floatBytes(sinograms))
	if err := p.run(); err != nil {
		return err
	}
	if err := p.dev.Synchronize(); err != nil {
		return err
	}
	out, err := p.managed.vol.HostView(false)
	if err != nil {
		return err
	}
	copy(floatBytes(p.res.Volume), out)
	return nil
}

// runManaged queues every chunk on its slot's stream (queueManaged), then
// waits for them in order (settle).
func (p *pipeline) runManaged() error {
	if err := p.slots[0].s.Record(p.t0); err != nil {
		return err
	}
	chunks := p.res.Plan.Chunks
	for i, ch := range chunks {
		if err := p.queueManaged(i); err != nil {
			return fmt.Errorf("slices [%d, %d): %w", ch.Start, ch.Start+ch.Len, err)
		}
	}
	for i, ch := range chunks {
		if err := p.settle(i); err != nil {
			return fmt.Errorf("slices [%d, %d): %w", ch.Start, ch.Start+ch.Len, err)
		}
	}
	return nil
}

// queueManaged queues chunk i on the stream of slot i mod depth, behind
// the slot's chunk before: the prefetch of its sinograms and images to
// the device (where it takes one), its kernels on the views, in place,
// and the prefetch of its images to the host; its events mark the
// prefetch to the device done (up), its kernels' start and end, and its
// images on their way to the host (down). With several slots, the chunk's
// stream first waits for the chunk before to be on the device: the
// chunks move there in order, so that the pages a full device evicts
// first, those that moved there least recently, are the filtered
// sinograms of chunks done, not the pages of a chunk in flight on a
// stream that another has overtaken.
func (p *pipeline) queueManaged(i int) error {
	ch := p.res.Plan.Chunks[i]
	sl, e := p.slots[i%len(p.slots)], p.evs[i]
	sino, img, err := p.managed.chunk(ch.Start, ch.Start+ch.Len)
	if err != nil {
		return err
	}
	if i > 0 && len(p.slots) > 1 {
		if err := sl.s.WaitEvent(p.evs[i-1].up); err != nil {
			return err
		}
	}
	if p.managed.toDevice {
		for _, a := range []*devarray.DevArray{sino, img} {
			if err := sl.s.Prefetch(a.Ptr(), a.NBytes(), p.managed.here); err != nil {
				return err
			}
		}
	}
	if err := sl.s.Record(e.up); err != nil {
		return err
	}
	if err := p.filterAndProject(sl, sino, img, e.begin, e.end); err != nil {
		return err
	}
	if err := sl.s.Prefetch(img.Ptr(), img.NBytes(), driver.HostLocation); err != nil {
		return err
	}
	return sl.s.Record(e.down)
}

// ManagedTraffic is what the ledger counted of a run in managed memory:
// the managed memory it allocated, the bytes the driver moved on its own
// per path and direction, and its page events.
type ManagedTraffic struct {
	// Bytes is the managed memory the run allocated: the sinograms and
	// the volume, whole.
	Bytes        int64 `json:"managed_bytes"`
	PrefetchHtoD int64 `json:"prefetch_htod_bytes"`
	PrefetchDtoH int64 `json:"prefetch_dtoh_bytes"`
	MigratedHtoD int64 `json:"migrated_htod_bytes"` // on a page fault
	MigratedDtoH int64 `json:"migrated_dtoh_bytes"` // on a page fault, and each eviction
	// ManagedStats are the ledger's page faults, read duplicates and
	// evictions during the run, read before and after it (a ledger's
	// scope does not count them): another user of the device meanwhile
	// counts in them too.
	accounting.ManagedStats
}

// managedTrafficOf reads a run's managed figures from its scope's
// snapshot and the ledger's page events before and after it.
func managedTrafficOf(s accounting.Snapshot, before, after accounting.ManagedStats) *ManagedTraffic {
	return &ManagedTraffic{
		Bytes:        s.Kinds[accounting.Managed].Allocated,
		PrefetchHtoD: s.Copies[accounting.HtoD][accounting.PathPrefetch].Bytes,
		PrefetchDtoH: s.Copies[accounting.DtoH][accounting.PathPrefetch].Bytes,
		MigratedHtoD: s.Copies[accounting.HtoD][accounting.PathMigrated].Bytes,
		MigratedDtoH: s.Copies[accounting.DtoH][accounting.PathMigrated].Bytes,
		ManagedStats: accounting.ManagedStats{
			Faults:     after.Faults - before.Faults,
			Duplicates: after.Duplicates - before.Duplicates,
			Evictions:  after.Evictions - before.Evictions,
			Uncounted:  after.Uncounted,
		},
	}
}
