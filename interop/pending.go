package interop

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Pending remembers device work that was queued on a stream and not yet
// seen complete, by the memory it touches, so that exports apply the
// stream rules of the CUDA Array Interface (v3) and DLPack to the work the
// exported array depends on, and to nothing else.
//
// Calls not named Async return with their work complete, so an array
// written only by them has nothing pending and is exported with no
// synchronization at all. An array that async work touches is exported
// with the stream to wait on (ExportStream, for CAI's "stream"), after the
// consumer's stream was made to wait on an event (WaitOn, for DLPack's
// stream argument) or after the host waited (Wait, for a consumer without
// a stream: NumPy, another process, a synchronous call). The device as a
// whole is never synchronized.
//
//	op, err := copier.CopyAsync(s, transfer.Dev(dst), transfer.Dev(src))
//	...
//	err = pending.Queued(dev, s, nil, dst, src)
//	...
//	stream, err := pending.ExportStream(dst) // 0 once the copy is done
//	m, err := interop.ExportCAI(dst, stream)
//
// The zero value is ready to use; a Pending is safe for concurrent use.
type Pending struct {
	mu    sync.Mutex
	work  []*pendingWork // in the order it was queued
	count atomic.Int64   // len(work), read without the lock
}

// pendingWork is work queued on one stream up to its event.
type pendingWork struct {
	dev     driver.Device
	stream  uintptr // the handle of the stream the work was queued on
	ev      driver.Event
	spans   []span
	done    func() error
	waiters int  // callers waiting on ev outside the lock: ev stays open
	over    bool // ev was seen complete
}

// span is the memory an array's elements reach on one device.
type span struct {
	dev    devarray.DeviceID
	lo, hi devarray.Ptr
}

func spanOf(a *devarray.DevArray) span {
	lo, hi := a.Extent()
	p := a.Ptr()
	return span{dev: a.Device(), lo: p + devarray.Ptr(lo), hi: p + devarray.Ptr(hi)}
}

func (s span) overlaps(o span) bool { return s.dev == o.dev && s.lo < o.hi && o.lo < s.hi }

// Queued records that work touching the memory of arrays (every view of
// it, and any other array that overlaps it) was just queued on stream s of
// dev: it records an event on s, which later exports of that memory wait
// for. done, if not nil, runs once when the work is known to be complete
// (to let go of what the work held; a transfer.Op's Done, say), with the
// error of waiting for it if that failed. s must stay usable until then.
// On error nothing is recorded and done is not called.
func (p *Pending) Queued(dev driver.Device, s driver.Stream, done func() error, arrays ...*devarray.DevArray) error {
	if dev == nil || s == nil {
		return fmt.Errorf("interop: pending work: no device or stream: %w", driver.ErrInvalidValue)
	}
	w := &pendingWork{dev: dev, stream: s.Handle(), done: done}
	for _, a := range arrays {
		if sp := spanOf(a); sp.lo < sp.hi {
			w.spans = append(w.spans, sp)
		}
	}
	ev, err := dev.NewEvent()
	if err != nil {
		return fmt.Errorf("interop: pending work: %w", err)
	}
	if err := s.Record(ev); err != nil {
		return errors.Join(fmt.Errorf("interop: pending work: %w", err), ev.Close())
	}
	w.ev = ev
	p.mu.Lock()
	p.work = append(p.work, w)
	p.count.Store(int64(len(p.work)))
	p.mu.Unlock()
	return nil
}

// Len returns how much recorded work has not yet been seen complete. It
// is one atomic load: 0 means no export needs to synchronize anything.
func (p *Pending) Len() int { return int(p.count.Load()) }

// Reap forgets the work that has completed (running its done functions)
// and returns the errors the finished work reported.
func (p *Pending) Reap() error {
	if p.Len() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reapLocked()
}

func (p *Pending) reapLocked() error {
	var errs []error
	kept := p.work[:0]
	for _, w := range p.work {
		if w.waiters == 0 {
			over, err := w.over, error(nil)
			if !over {
				over, err = w.ev.Query()
				over = over || err != nil // a failed stream has nothing left to wait for
			}
			if over {
				errs = append(errs, err, w.finish())
				continue
			}
		}
		kept = append(kept, w)
	}
	clear(p.work[len(kept):])
	p.work = kept
	p.count.Store(int64(len(p.work)))
	return errors.Join(errs...)
}

// finish lets go of completed work.
func (w *pendingWork) finish() error {
	var err error
	if w.done != nil {
		err = w.done()
	}
	return errors.Join(err, w.ev.Close())
}

// hold reaps, then returns the work on a's memory, held open (waiters)
// until release.
func (p *Pending) hold(a *devarray.DevArray) ([]*pendingWork, error) {
	if p.Len() == 0 {
		return nil, nil
	}
	sp := spanOf(a)
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.reapLocked()
	var ws []*pendingWork
	for _, w := range p.work {
		if slices.ContainsFunc(w.spans, sp.overlaps) {
			w.waiters++
			ws = append(ws, w)
		}
	}
	return ws, err
}

// release ends hold; over marks the work whose event the host waited for.
func (p *Pending) release(ws []*pendingWork, over func(*pendingWork) bool) error {
	if len(ws) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range ws {
		w.waiters--
		w.over = w.over || over(w)
	}
	return p.reapLocked()
}

// waitHost has the host wait for the events of ws.
func waitHost(ws []*pendingWork) (map[*pendingWork]bool, error) {
	var errs []error
	waited := make(map[*pendingWork]bool, len(ws))
	for _, w := range ws {
		err := w.ev.Synchronize()
		waited[w] = true // done, or failed: nothing left to wait for either way
		errs = append(errs, err)
	}
	return waited, errors.Join(errs...)
}

// Wait makes the host wait until the pending work on a's memory is
// complete: what a consumer without a stream needs (NumPy, another
// process, a synchronous call). With nothing pending it returns at once.
func (p *Pending) Wait(a *devarray.DevArray) error {
	ws, err := p.hold(a)
	waited, werr := waitHost(ws)
	err = errors.Join(err, werr, p.release(ws, func(w *pendingWork) bool { return waited[w] }))
	if err != nil {
		return fmt.Errorf("interop: wait for the work on %v: %w", a, err)
	}
	return nil
}

// ExportStream returns the stream a CUDA Array Interface export of a
// names in its "stream" key: the stream of the latest pending work on a's
// memory, or 0 (None: no synchronization needed) when there is none. The
// consumer waits for that stream; work on a's memory pending on other
// streams, or on the per-thread default stream (which names a different
// stream on the consumer's thread), is waited for by the host first.
func (p *Pending) ExportStream(a *devarray.DevArray) (uintptr, error) {
	ws, err := p.hold(a)
	if len(ws) == 0 {
		return 0, err
	}
	publish := ws[len(ws)-1].stream
	if publish == driver.PerThreadDefaultStream {
		publish = 0
	}
	var host []*pendingWork
	for _, w := range ws {
		if w.stream != publish {
			host = append(host, w)
		}
	}
	waited, werr := waitHost(host)
	err = errors.Join(err, werr, p.release(ws, func(w *pendingWork) bool { return waited[w] }))
	if err != nil {
		return 0, fmt.Errorf("interop: stream for an export of %v: %w", a, err)
	}
	return publish, nil
}

// WaitOn applies DLPack's stream argument to an export of a: the
// consumer's stream (a handle of a's device: 1 for CUDA's legacy default
// stream, 2 for the per-thread one, or a stream) waits on the device for
// the pending work on a's memory, and the caller does not block. Work
// pending on another device is waited for by the host. With nothing
// pending it does nothing at all. Handle 0 is ambiguous and an error;
// DLPack's -1 ("no synchronization") and None on a CPU device are the
// caller's to handle (nothing, and Wait).
func (p *Pending) WaitOn(a *devarray.DevArray, consumer uintptr) error {
	if consumer == 0 {
		return fmt.Errorf("interop: wait on stream 0: ambiguous (1 is the legacy default stream): %w", ErrInterface)
	}
	ws, err := p.hold(a)
	if len(ws) == 0 {
		return err
	}
	var host []*pendingWork
	var ext driver.Stream
	for _, w := range ws {
		if w.dev.DeviceID() != a.Device() {
			host = append(host, w)
			continue
		}
		if ext == nil {
			var xerr error
			if ext, xerr = w.dev.ExternalStream(consumer); xerr != nil {
				err = errors.Join(err, xerr)
				break
			}
		}
		err = errors.Join(err, ext.WaitEvent(w.ev))
	}
	if ext != nil {
		// An event may be released while a stream waits on it; closing
		// the wrapper of a borrowed stream leaves the stream as it is.
		err = errors.Join(err, ext.Close())
	}
	waited, werr := waitHost(host)
	err = errors.Join(err, werr, p.release(ws, func(w *pendingWork) bool { return waited[w] }))
	if err != nil {
		return fmt.Errorf("interop: stream %#x waits for the work on %v: %w", consumer, a, err)
	}
	return nil
}
