package bench

import (
	"bytes"
	"errors"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// Bidir names the bidirectional row: an HtoD and a DtoH copy of the same
// size along the pinned path at once, on two streams, so that the copy
// engines of both directions are busy together.
const Bidir = "bidir"

// BidirDirection is the bidirectional row's direction.
const BidirDirection = "HtoD+DtoH"

// measureBidir times reps pairs of pinned copies of len(pattern) bytes, an
// HtoD on one stream and a DtoH on another, started together (the second
// stream waits for an event recorded on the first) and timed until both
// are done, on the wall clock and between that event and the later of the
// two streams' end events. Its GB/s counts both copies' bytes; its ledger
// counts both directions' bytes on the pinned path.
func measureBidir(c *transfer.Copier, pattern []byte, reps int) (res Result, err error) {
	dev := c.Device()
	size := int64(len(pattern))
	var cleanup []func() error
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanup[i]())
		}
	}()
	var bufs [2]*pinned.Buffer
	for i := range bufs {
		if bufs[i], err = pinned.Alloc(dev, size, 0); err != nil {
			return Result{}, err
		}
		cleanup = append(cleanup, bufs[i].Free)
	}
	var arrs [2]*devarray.DevArray
	for i := range arrs {
		if arrs[i], err = devarray.Empty(dev, devarray.Uint8, int(size)); err != nil {
			return Result{}, err
		}
		cleanup = append(cleanup, arrs[i].Free)
	}
	var streams [2]driver.Stream
	for i := range streams {
		if streams[i], err = dev.NewStream(); err != nil {
			return Result{}, err
		}
		cleanup = append(cleanup, streams[i].Close)
	}
	var evs [3]driver.Event // start, the HtoD's end, the DtoH's end
	for i := range evs {
		if evs[i], err = dev.NewEvent(); err != nil {
			return Result{}, err
		}
		cleanup = append(cleanup, evs[i].Close)
	}
	// bufs[0] → arrs[0] (HtoD) while arrs[1] → bufs[1] (DtoH).
	copy(bufs[0].Bytes(), pattern)
	if err := arrs[1].CopyFrom(pattern); err != nil {
		return Result{}, err
	}
	up := [2]transfer.Endpoint{transfer.Dev(arrs[0]), transfer.Pinned(bufs[0], devarray.Uint8)}
	down := [2]transfer.Endpoint{transfer.Pinned(bufs[1], devarray.Uint8), transfer.Dev(arrs[1])}
	opt := transfer.Via(transfer.PathPinned)
	pair := func() (wall, event time.Duration, timed bool, err error) {
		t0 := time.Now()
		err = streams[0].Record(evs[0])
		if err == nil {
			err = streams[1].WaitEvent(evs[0])
		}
		var ops []*transfer.Op
		for i, ends := range [][2]transfer.Endpoint{up, down} {
			if err != nil {
				break
			}
			var op *transfer.Op
			if op, err = c.CopyAsync(streams[i], ends[0], ends[1], opt); err == nil {
				ops = append(ops, op)
				err = streams[i].Record(evs[1+i])
			}
		}
		for _, op := range ops {
			err = errors.Join(err, op.Wait())
		}
		for _, s := range streams {
			err = errors.Join(err, s.Synchronize())
		}
		wall = time.Since(t0)
		if err != nil {
			return 0, 0, false, err
		}
		timed = true
		for _, e := range evs[1:] {
			d, err := e.Elapsed(evs[0])
			if err != nil {
				timed = false // events without timing: the wall clock alone
				break
			}
			event = max(event, d)
		}
		return wall, event, timed, nil
	}
	if _, _, _, err := pair(); err != nil { // warm-up
		return Result{}, err
	}
	scramble := randomBytes(size) // the timed copies, not the warm-up, must deliver the data
	copy(bufs[1].Bytes(), scramble)
	if err := arrs[0].CopyFrom(scramble); err != nil {
		return Result{}, err
	}
	led := dev.Ledger()
	before := led.Snapshot()
	times, events := make([]time.Duration, reps), make([]time.Duration, reps)
	for i := range times {
		var timed bool
		if times[i], events[i], timed, err = pair(); err != nil {
			return Result{}, err
		}
		if !timed {
			events = events[:0:0]
		}
	}
	diff := accounting.Diff(before, led.Snapshot())
	got, err := devarray.ToHost[uint8](arrs[0])
	if err != nil {
		return Result{}, err
	}
	if !bytes.Equal(got, pattern) || !bytes.Equal(bufs[1].Bytes(), pattern) {
		return Result{}, errData
	}
	// The row's figures are both copies' bytes over the pair's time.
	res = summarize(Bidir, accounting.HtoD, 2*size, times)
	res.Direction, res.Size = BidirDirection, size
	if len(events) > 0 {
		med := median(events)
		res.EventMedianSeconds = med.Seconds()
		res.EventGBps = float64(2*size) / max(med.Seconds(), 1e-9) / 1e9
	}
	var wall time.Duration
	for _, t := range times {
		wall += t
	}
	res.Ledger = bidirCounts(diff, 2*size*int64(reps), wall)
	return res, nil
}

// bidirCounts checks the ledger's record of the bidirectional copies: both
// directions' bytes on the pinned path, nothing on any other; its Seconds
// are the longer direction's. A backend that records an async copy when
// it is queued, not when it is done (the cuda backend: knowing when each
// is done would take an event each), records it in 0 s: then the pairs'
// wall time, wall, stands in.
func bidirCounts(diff accounting.Snapshot, requested int64, wall time.Duration) *Counts {
	lp := transfer.PathPinned.Ledger()
	c := &Counts{Requested: requested, HostStaging: diff.Copies[accounting.HtoH][accounting.PathStaged].Bytes}
	var total int64
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		c.Bytes += diff.Copies[dir][lp].Bytes
		c.Copies += diff.Copies[dir][lp].Count
		// The two directions ran at once: the longer one's time is the
		// pairs', so the ledger's figure is both directions' bytes over it.
		c.Seconds = max(c.Seconds, diff.Copies[dir][lp].Seconds)
		total += diff.CopyTotal(dir).Bytes
	}
	if c.Seconds <= 0 {
		c.Seconds = wall.Seconds()
	}
	c.Other = total - c.Bytes
	c.OK = c.Bytes == requested && c.Other == 0 && c.HostStaging == 0
	return c
}
