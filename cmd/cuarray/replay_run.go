package main

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pool"
)

// replayResult is what a replay found; `cuarray replay -json` prints it.
type replayResult struct {
	Log      string `json:"log"`
	Recorded string `json:"recorded_on"` // the recording ledger's name
	Device   string `json:"device"`
	Total    int64  `json:"device_total_bytes"`
	Pool     bool   `json:"pool"`
	// Fits is true when every allocation of the log succeeded.
	Fits bool `json:"fits"`
	// Allocs and Frees are the allocations and frees replayed (up to the
	// first failure); Events the log's events in all.
	Allocs int `json:"allocs"`
	Frees  int `json:"frees"`
	Events int `json:"log_events"`
	// RecordedPeak is the most device bytes the recorded run's ledger had
	// in use at once (Log.Peak), counted from the start of the recording.
	RecordedPeak int64 `json:"recorded_peak_bytes"`
	// PeakInUse is the most bytes the replayed allocations held at once:
	// the device ledger's peak without the pool, the pool's in-use peak
	// with it. PeakReserved is the most the device gave up at once: the
	// same as PeakInUse without the pool, the pool's segments with it.
	PeakInUse    int64 `json:"peak_in_use_bytes"`
	PeakReserved int64 `json:"peak_reserved_bytes"`
	// ReservedOverInUse is PeakReserved / PeakInUse: what the pool's
	// caching costs at the peak (1 without the pool).
	ReservedOverInUse float64 `json:"reserved_over_in_use"`
	// Fragmentation is, with the pool, 1 − (largest free block) / (free
	// bytes the pool holds), taken when the bytes reserved peaked: 0 when
	// the free cache is one block, near 1 when it is in many small pieces
	// that a large request cannot use. 0 without the pool. It is the
	// pool's cache's, not the device's: the device's free memory at a
	// failure is Failure.Fragmentation.
	Fragmentation float64 `json:"fragmentation"`
	// PoolStats are the pool's counts at the end (with -pool=on).
	PoolStats *poolCounts `json:"pool_stats,omitempty"`
	// Failure is the first allocation that failed, nil when it fits.
	Failure *replayFailure `json:"first_failure,omitempty"`
	Skipped replaySkipped  `json:"skipped"`
	// NotFreed counts the allocations the log never freed (the recording
	// stopped first, or the run leaked them); the replay frees them at the end.
	NotFreed int `json:"not_freed_in_log"`
}

// poolCounts are the pool's counts a replay reports.
type poolCounts struct {
	FromCache  int64 `json:"from_cache"`
	FromDevice int64 `json:"from_device"`
	OOMRetries int64 `json:"oom_retries"`
	Released   int64 `json:"segments_released"`
}

// replayFailure is the first allocation of a replay that failed.
type replayFailure struct {
	Event    int     `json:"event"` // its index among the log's events, from 0
	ID       int     `json:"alloc_id"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"at_seconds"` // since the recording began
	Scope    string  `json:"scope"`
	InUse    int64   `json:"in_use_bytes"`   // held by the replayed allocations when it failed
	Reserved int64   `json:"reserved_bytes"` // held from the device when it failed
	Error    string  `json:"error"`
	// DeviceFree and DeviceLargestFree are the device's free bytes and
	// the largest block of them when it refused, where the device tells
	// the largest (sim; the CUDA driver does not), and Fragmentation is
	// 1 − DeviceLargestFree / DeviceFree then; absent elsewhere.
	DeviceFree        int64    `json:"device_free_bytes,omitempty"`
	DeviceLargestFree int64    `json:"device_largest_free_bytes,omitempty"`
	Fragmentation     *float64 `json:"device_fragmentation,omitempty"`
}

// noteDevice fills in f's device figures from the allocation's error,
// where the device told its largest free block.
func (f *replayFailure) noteDevice(err error) {
	var po *pool.OutOfMemoryError
	var do *accounting.OutOfMemoryError
	switch {
	case errors.As(err, &po) && po.LargestFree > 0 && po.Free >= 0:
		f.DeviceFree, f.DeviceLargestFree = po.Free, po.LargestFree
	case errors.As(err, &do) && do.DeviceLargestFree > 0 && do.DeviceFree >= 0:
		f.DeviceFree, f.DeviceLargestFree = do.DeviceFree, do.DeviceLargestFree
	default:
		return
	}
	fr := accounting.Fragmentation(f.DeviceLargestFree, f.DeviceFree)
	f.Fragmentation = &fr
}

// replaySkipped counts the log's events a replay leaves out.
type replaySkipped struct {
	OtherKinds    int `json:"other_kinds"`     // host memory and the like: not device memory
	Segments      int `json:"segments"`        // the recorded pool's segments: the replay's own pool, or none, stands in
	Failed        int `json:"recorded_failed"` // allocations that failed in the recorded run
	UnpairedFrees int `json:"unpaired_frees"`  // frees of allocations made before the recording
	AfterFailure  int `json:"after_failure"`   // events after the first failure
}

// maxReplayStreams is the most streams a replay through the pool opens,
// one per stream the log names: each costs the device a stream (on sim a
// goroutine and its queue), and a log can name a new one in every event.
const maxReplayStreams = 1024

// replayer replays a log's device allocations on a device, or through a
// pool on it.
type replayer struct {
	dev     driver.Device
	pool    *pool.Pool
	streams map[int]driver.Stream
	live    map[int]devarray.Ptr // by allocation id
	res     *replayResult
	inUse   int64 // bytes the replayed allocations hold, without the pool
}

// replay replays g on dev (through a pool when withPool) and frees what it
// allocated on every path. An allocation that fails for want of memory
// ends the replay and is the result's Failure; any other error is returned.
func replay(dev driver.Device, g *accounting.Log, withPool bool) (res *replayResult, err error) {
	res = &replayResult{Recorded: g.Name, Device: dev.Info().Name, Pool: withPool, Fits: true,
		Events: len(g.Events), RecordedPeak: g.Peak(accounting.Device)}
	if _, total, err := dev.MemInfo(); err == nil {
		res.Total = total
	}
	if withPool && g.Streams > maxReplayStreams {
		return nil, fmt.Errorf("replay: the log names %d streams; a replay through the pool opens at most %d (-pool=off replays it on one)",
			g.Streams, maxReplayStreams)
	}
	r := &replayer{dev: dev, live: make(map[int]devarray.Ptr), streams: make(map[int]driver.Stream), res: res}
	led := dev.Ledger()
	scope := led.Push("cuarray replay")
	if withPool {
		r.pool = pool.New(dev)
	}
	defer func() {
		err = errors.Join(err, r.cleanup())
		snap, perr := scope.Pop()
		err = errors.Join(err, perr)
		if !withPool {
			res.PeakInUse = snap.Kinds[accounting.Device].Peak
			res.PeakReserved = res.PeakInUse
		}
		if res.PeakInUse > 0 {
			res.ReservedOverInUse = float64(res.PeakReserved) / float64(res.PeakInUse)
		}
	}()
	for i, e := range g.Events {
		if !res.Fits {
			res.Skipped.AfterFailure++
			continue
		}
		switch {
		case e.Kind != accounting.Device:
			res.Skipped.OtherKinds++
		case e.Segment:
			res.Skipped.Segments++
		case e.Op == accounting.OpFailed:
			res.Skipped.Failed++
		case e.Op == accounting.OpFree && e.ID == 0:
			res.Skipped.UnpairedFrees++
		case e.Op == accounting.OpAlloc:
			if err := r.alloc(g, i, e); err != nil {
				return res, err
			}
		case e.Op == accounting.OpFree:
			if err := r.free(e); err != nil {
				return res, err
			}
		}
	}
	if res.Fits {
		res.NotFreed = len(r.live)
	}
	return res, nil
}

// stream returns the replay's stream for the log's stream n (nil: the default stream).
func (r *replayer) stream(n int) (driver.Stream, error) {
	if n == 0 || r.pool == nil {
		return nil, nil
	}
	if s, ok := r.streams[n]; ok {
		return s, nil
	}
	s, err := r.dev.NewStream()
	if err != nil {
		return nil, fmt.Errorf("replay: stream %d: %w", n, err)
	}
	r.streams[n] = s
	return s, nil
}

// alloc replays allocation e, event i of g.
func (r *replayer) alloc(g *accounting.Log, i int, e accounting.LogEvent) error {
	s, err := r.stream(e.Stream)
	if err != nil {
		return err
	}
	var p devarray.Ptr
	if r.pool != nil {
		p, err = r.pool.AllocAsync(e.Bytes, s)
	} else {
		p, err = r.dev.Malloc(e.Bytes)
	}
	// Larger than the whole device is a failure to fit however the
	// allocator words it (the pool refuses sizes it cannot round up as
	// invalid rather than out of memory).
	if errors.Is(err, accounting.ErrOutOfMemory) || (err != nil && r.res.Total > 0 && e.Bytes > r.res.Total) {
		f := &replayFailure{Event: i, ID: e.ID, Bytes: e.Bytes, Seconds: e.At.Seconds(), Scope: g.ScopeName(e.Scope),
			InUse: r.dev.Ledger().Current(accounting.Device), Error: err.Error()}
		f.Reserved = f.InUse
		f.noteDevice(err)
		if r.pool != nil {
			st := r.pool.Stats()
			f.InUse, f.Reserved = st.InUse, st.Reserved
		}
		r.res.Fits, r.res.Failure = false, f
		return nil
	}
	if err != nil {
		return fmt.Errorf("replay: allocation %d (%s): %w", e.ID, accounting.FormatBytes(e.Bytes), err)
	}
	r.live[e.ID] = p
	r.res.Allocs++
	if r.pool != nil {
		r.notePool()
	}
	return nil
}

// notePool takes the pool's peaks, and its fragmentation when the bytes
// reserved reach a new peak.
func (r *replayer) notePool() {
	st := r.pool.Stats()
	if st.Reserved > r.res.PeakReserved {
		r.res.Fragmentation = st.Fragmentation
	}
	r.res.PeakInUse, r.res.PeakReserved = st.PeakInUse, st.PeakReserved
}

// free replays free e.
func (r *replayer) free(e accounting.LogEvent) error {
	p, ok := r.live[e.ID]
	if !ok {
		return nil // its allocation was left out (another kind, or after a failure)
	}
	delete(r.live, e.ID)
	s, err := r.stream(e.Stream)
	if err != nil {
		return err
	}
	if r.pool != nil {
		err = r.pool.FreeAsync(p, s)
	} else {
		err = r.dev.Free(p)
	}
	if err != nil {
		return fmt.Errorf("replay: free of allocation %d: %w", e.ID, err)
	}
	r.res.Frees++
	return nil
}

// cleanup frees what is still allocated, then the pool and the streams.
func (r *replayer) cleanup() error {
	var errs []error
	for id, p := range r.live {
		if r.pool != nil {
			errs = append(errs, r.pool.Free(p))
		} else {
			errs = append(errs, r.dev.Free(p))
		}
		delete(r.live, id)
	}
	if r.pool != nil {
		st := r.pool.Stats()
		r.res.PoolStats = &poolCounts{FromCache: st.FromCache, FromDevice: st.FromDevice, OOMRetries: st.OOMRetries, Released: st.Released}
		r.res.PeakInUse, r.res.PeakReserved = st.PeakInUse, st.PeakReserved
		errs = append(errs, r.pool.Release())
	}
	for _, s := range r.streams {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
