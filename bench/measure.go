package bench

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// errData means a copy did not deliver the bytes it was given.
var errData = errors.New("bench: the copied data differs from the source")

// measurePath times reps copies of size bytes of pattern along path p in
// direction dir, after one warm-up copy, and checks the data and the
// ledger's counts of the timed copies. With events, it then times reps more
// copies between two events each (eventTimes).
func measurePath(c *transfer.Copier, p transfer.Path, dir accounting.Direction, pattern []byte, reps int, events bool) (res Result, err error) {
	dev := c.Device()
	size := int64(len(pattern))
	var cleanup []func() error
	defer func() {
		for _, f := range cleanup {
			err = errors.Join(err, f())
		}
	}()
	devSide := func() (*devarray.DevArray, error) {
		a, err := devarray.Empty(dev, devarray.Uint8, int(size))
		if err == nil {
			cleanup = append(cleanup, a.Free)
		}
		return a, err
	}
	a, err := devSide()
	if err != nil {
		return Result{}, err
	}
	var host transfer.Endpoint
	var hostMem []byte
	var other *devarray.DevArray // the d2d destination
	switch p {
	case transfer.PathDirect, transfer.PathStaged, transfer.PathRegistered: // Go memory (registered: page-locked by the copier, once)
		hostMem = make([]byte, size)
		host = transfer.HostBytes(hostMem, devarray.Uint8)
	case transfer.PathPinned, transfer.PathMapped:
		flags := pinned.Flags(0)
		if p == transfer.PathMapped {
			flags = pinned.Mapped
		}
		buf, err := pinned.Alloc(dev, size, flags)
		if err != nil {
			return Result{}, err
		}
		cleanup = append(cleanup, buf.Free)
		hostMem = buf.Bytes()
		host = transfer.Pinned(buf, devarray.Uint8)
	case transfer.PathD2D:
		if other, err = devSide(); err != nil {
			return Result{}, err
		}
		host = transfer.Dev(other) // the other device array plays the host's part
	default:
		return Result{}, fmt.Errorf("bench: path %v is not measured here", p)
	}
	var src, dst transfer.Endpoint
	var check func() error // the destination holds pattern
	switch dir {
	case accounting.HtoD:
		copy(hostMem, pattern)
		src, dst = host, transfer.Dev(a)
		check = func() error { return equalOnDevice(a, pattern) }
	case accounting.DtoH, accounting.DtoD:
		if err := a.CopyFrom(pattern); err != nil {
			return Result{}, err
		}
		src, dst = transfer.Dev(a), host
		check = func() error {
			if other != nil {
				return equalOnDevice(other, pattern)
			}
			if !bytes.Equal(hostMem, pattern) {
				return errData
			}
			return nil
		}
	}
	opt := transfer.Via(p)
	if err := c.Copy(dst, src, opt); err != nil { // warm-up: pages touched, ring allocated
		return Result{}, err
	}
	led := dev.Ledger()
	before := led.Snapshot()
	times := make([]time.Duration, reps)
	for i := range times {
		start := time.Now()
		if err := c.Copy(dst, src, opt); err != nil {
			return Result{}, err
		}
		times[i] = time.Since(start)
	}
	diff := accounting.Diff(before, led.Snapshot())
	var evTimes []time.Duration
	if events {
		var direct func(s driver.Stream) error // the driver's own copy of Go memory
		if p == transfer.PathDirect {
			direct = func(s driver.Stream) error {
				if dir == accounting.HtoD {
					return s.CopyHtoDAsync(a.Ptr(), hostMem)
				}
				return s.CopyDtoHAsync(hostMem, a.Ptr())
			}
		}
		if evTimes, err = eventTimes(c, p, dst, src, opt, direct, reps); err != nil {
			return Result{}, err
		}
	}
	if err := check(); err != nil {
		return Result{}, err
	}
	res = summarize(p.String(), dir, size, times)
	res.setEvent(evTimes)
	res.setLatency()
	res.Ledger = counts(diff, p, dir, size*int64(reps))
	return res, nil
}

// eventTimes makes reps more copies of src into dst, each on a stream of
// its own between two events recorded there, and returns the time between
// the events: the device's time for the copy, without the cost of queueing
// it and waiting for it (which the wall-clock figure, a synchronous Copy
// as a program makes it, includes). It returns nil where no pair of events
// on one stream brackets the copy, or the device does not time events. A
// staged copy is driven by goroutines gathering on the host, which queue
// its DMAs as the chunks fill, after CopyAsync has returned: no pair of
// events brackets it. The mapped path's
// kernel runs on the timer's stream between the events, as every other
// path's copy does. (These copies come after the row's ledger figures were
// taken: an async kernel copy is in the ledger with no time, which the
// ceiling check would refuse.)
//
// The direct path is timed as the driver's own copy of the Go memory,
// queued on the timer's stream (direct): transfer's CopyAsync runs a
// direct copy on a goroutine of the copier's, since a driver copy of
// pageable memory waits, so no pair of events would bracket it there.
func eventTimes(c *transfer.Copier, p transfer.Path, dst, src transfer.Endpoint, opt transfer.Option, direct func(driver.Stream) error, reps int) (events []time.Duration, err error) {
	if p == transfer.PathStaged {
		return nil, nil
	}
	t, err := newEventTimer(c.Device())
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, t.Close()) }()
	events = make([]time.Duration, reps)
	for i := range events {
		var ev time.Duration
		var ok bool
		if direct != nil {
			ev, ok, err = t.time(func(s driver.Stream) (func() error, error) { return s.Synchronize, direct(s) })
		} else {
			ev, ok, err = t.copy(c, dst, src, opt)
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		events[i] = ev
	}
	return events, nil
}

// counts checks the ledger's record of the timed copies against what was asked.
func counts(diff accounting.Snapshot, p transfer.Path, dir accounting.Direction, requested int64) *Counts {
	lp := p.Ledger()
	c := &Counts{
		Requested:   requested,
		Bytes:       diff.Copies[dir][lp].Bytes,
		Copies:      diff.Copies[dir][lp].Count,
		HostStaging: diff.Copies[accounting.HtoH][accounting.PathStaged].Bytes,
		Seconds:     diff.Copies[dir][lp].Seconds,
	}
	c.Other = diff.CopyTotal(dir).Bytes - c.Bytes
	wantStaging := int64(0)
	if p == transfer.PathStaged {
		wantStaging = requested
	}
	c.OK = c.Bytes == requested && c.Other == 0 && c.HostStaging == wantStaging
	return c
}

// checkChunk is the most bytes equalOnDevice reads back at once.
const checkChunk = 16 << 20

// equalOnDevice checks that the 1-D uint8 array a holds want, reading it
// back checkChunk bytes at a time, so that checking a 1 GiB copy holds
// 16 MiB more of host memory, not another 1 GiB.
func equalOnDevice(a *devarray.DevArray, want []byte) error {
	for off := 0; off < len(want); off += checkChunk {
		end := min(off+checkChunk, len(want))
		v, err := a.Slice(0, off, end)
		if err != nil {
			return err
		}
		got, err := devarray.ToHost[uint8](v)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want[off:end]) {
			return errData
		}
	}
	return nil
}
