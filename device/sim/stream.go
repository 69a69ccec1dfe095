package sim

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// streamDepth is how many operations a stream queues before an enqueue
// blocks, like the driver's launch queue.
const streamDepth = 1024

// streamOp is one operation of a stream: run does the work, no sooner than due
// (zero: at once), which is how the Latency option makes device work finish
// after the call that queued it has returned, as on a GPU.
type streamOp struct {
	run    func() error
	due    time.Time
	queued time.Time // when it was queued (pushOp)
	// finished, when set, is closed once the operation no longer counts
	// as pending: a wait that ends on it (drain) finds the stream idle.
	finished chan struct{}
	// began, when set, is when the operation's work began on the host
	// before it was queued: a pageable copy's staging (stageHtoD). The
	// model starts the operation then rather than when it was queued.
	began time.Time
}

// streamClock is the model's clock of a stream's goroutine, which alone
// touches it: doneAt is when the work run so far completed in the model,
// startAt when the running operation could begin (when it was due, or
// queued, and the operation before it was done), and endAt, when a
// modelled copy set it, when that copy completed on the link (copyOn). A
// stream holds it behind a pointer, which fmt prints as an address and
// never walks, so printing a stream reads nothing the goroutine writes.
type streamClock struct {
	doneAt, startAt, endAt time.Time
}

// stream runs its operations in order on its own goroutine.
type stream struct {
	d       *Device
	handle  uintptr
	ops     chan streamOp
	done    chan struct{} // closed when the goroutine exits
	pending atomic.Int64  // operations queued and not yet finished

	qmu    sync.Mutex // guards closed and sends on ops
	closed bool

	errMu    sync.Mutex // guards err, errGen, since and sinceGen; never held while waiting on the queue
	err      error      // first error of the work since the last Synchronize
	errGen   uint64     // counts the errors err has held
	since    error      // first error of the work since the last event record ran
	sinceGen uint64     // errGen when since is err, else 0

	lane *lane // the stream race checker's lane, nil when it is off

	clock *streamClock // the model's clock of the stream's goroutine

	logical logicalActivity // work queued since the host last synchronized (managed memory's host access)
}

var _ driver.Stream = (*stream)(nil)

// NewStream starts a stream.
func (d *Device) NewStream() (driver.Stream, error) {
	d.mu.RLock()
	closed := d.closed
	d.mu.RUnlock()
	if closed {
		return nil, fmt.Errorf("sim: new stream: %w", driver.ErrClosed)
	}
	if err := d.checkFault("new stream"); err != nil {
		return nil, err
	}
	return d.startStream(0, true), nil
}

// NewNonBlockingStream returns a stream made with CU_STREAM_NON_BLOCKING:
// it does not order with the legacy default stream, which the stream race
// checker (check=streams) holds it to. sim runs it as any other stream.
func (d *Device) NewNonBlockingStream() (driver.Stream, error) {
	if d.Closed() {
		return nil, fmt.Errorf("sim: new stream: %w", driver.ErrClosed)
	}
	if err := d.checkFault("new stream"); err != nil {
		return nil, err
	}
	return d.startStream(0, false), nil
}

// startStream makes a stream and starts its goroutine: with handle 0 it
// gets the next free handle. blocking: it orders with the legacy default
// stream (for the stream race checker).
func (d *Device) startStream(handle uintptr, blocking bool) *stream {
	s := &stream{d: d, ops: make(chan streamOp, streamDepth), done: make(chan struct{}), clock: &streamClock{}}
	d.streamsMu.Lock()
	if handle == 0 {
		d.lastHandle++
		handle = d.lastHandle
	}
	s.handle = handle
	d.streamsMu.Unlock()
	if c := d.check; c != nil {
		if handle == driver.LegacyDefaultStream {
			s.lane = c.legacy
		} else {
			s.lane = c.streamLane(handle, blocking)
		}
	}
	// Listed once its lane is set: Device.Synchronize reads the lane of
	// every stream listed, on another goroutine.
	d.streamsMu.Lock()
	d.streams[s] = struct{}{}
	d.streamsMu.Unlock()
	go s.run()
	return s
}

func (s *stream) run() {
	defer close(s.done)
	for op := range s.ops {
		if wait := time.Until(op.due); !op.due.IsZero() && wait > 0 {
			time.Sleep(wait)
		}
		// The operation could begin once it was due and the one before it
		// was done, in the model: a late wake-up of this goroutine (a sleep
		// overshoots) holds up no later work, as a GPU's copy engine runs
		// the copies queued on a stream back to back.
		c := s.clock
		queued := op.queued
		if !op.began.IsZero() {
			queued = op.began
		}
		c.startAt = latest(queued, op.due, c.doneAt)
		c.endAt = time.Time{}
		began := time.Now()
		err := safely(op.run)
		c.doneAt = c.endAt
		if c.doneAt.IsZero() { // not a modelled copy: it took the time it took
			c.doneAt = c.startAt.Add(time.Since(began))
		}
		if err != nil {
			s.errMu.Lock()
			first := s.err == nil
			if first {
				s.err = err
				s.errGen++
			}
			if s.since == nil {
				s.since, s.sinceGen = err, 0
				if first {
					s.sinceGen = s.errGen
				}
			}
			s.errMu.Unlock()
		}
		s.pending.Add(-1)
		if op.finished != nil {
			close(op.finished)
		}
	}
}

// latest returns the latest of the times.
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// safely runs f and turns a panic into an error, so that no request can
// kill the process from a goroutine its caller does not own.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sim: stream operation failed: %v: %w", r, driver.ErrInvalidValue)
		}
	}()
	return f()
}

// enqueue adds device work to the stream, due the device's latency from
// now, or fails if the stream is closed.
func (s *stream) enqueue(work func() error) error {
	return s.push(streamOp{run: work, due: s.d.due()})
}

// enqueueMarker adds an operation that does no device work (a wait, a
// synchronization point): it runs as soon as the stream reaches it.
func (s *stream) enqueueMarker(f func() error) error {
	return s.push(streamOp{run: f})
}

func (s *stream) push(op streamOp) error {
	if err := s.pushOp(op, true); err != nil {
		return err
	}
	s.logical.queued()
	return nil
}

// pushOp adds op to the stream; with faults, it fails once the device has
// faulted (an enqueue after the fault fails), else only on a closed stream.
func (s *stream) pushOp(op streamOp, faults bool) error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.closed {
		return fmt.Errorf("sim: stream: %w", driver.ErrClosed)
	}
	if faults {
		if err := s.d.checkFault("stream"); err != nil {
			return err
		}
	}
	s.pending.Add(1)
	op.queued = time.Now()
	s.ops <- op
	return nil
}

// due returns when device work queued now completes: now plus the latency,
// or zero (at once) without one.
func (d *Device) due() time.Time {
	if d.cfg.Latency <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d.cfg.Latency)
}

func (s *stream) CopyHtoDAsync(dst devarray.Ptr, src []byte) error {
	return s.copyHtoD(false, dst, src)
}

func (s *stream) copyHtoD(pt bool, dst devarray.Ptr, src []byte) error {
	pageable, err := s.d.pageable("async copy HtoD", src)
	if err != nil {
		return err
	}
	if pageable { // wait for the stream, then stage (pageable.go)
		if err := s.drain(); err != nil {
			return err
		}
		return s.stageHtoD(pt, dst, src)
	}
	if err := s.checkHtoD(pt, dst, src); err != nil {
		return err
	}
	return s.enqueue(func() error { return s.d.copyOn(s, "async copy HtoD", s.d.htod(dst, src)) })
}

// checkHtoD judges an async copy HtoD of src with the stream race checker.
func (s *stream) checkHtoD(pt bool, dst devarray.Ptr, src []byte) error {
	if s.d.check == nil {
		return nil
	}
	o := opSpec{kind: "async copy HtoD", accesses: []access{devBytes(dst, int64(len(src)), true)}}
	s.d.hostSide(&o, src, false)
	return s.checkOp(pt, o)
}

func (s *stream) CopyDtoHAsync(dst []byte, src devarray.Ptr) error {
	return s.copyDtoH(false, dst, src)
}

func (s *stream) copyDtoH(pt bool, dst []byte, src devarray.Ptr) error {
	if s.d.check != nil {
		o := opSpec{kind: "async copy DtoH", accesses: []access{devBytes(src, int64(len(dst)), false)}}
		s.d.hostSide(&o, dst, true)
		if err := s.checkOp(pt, o); err != nil {
			return err
		}
	}
	pageable, err := s.d.pageable("async copy DtoH", dst)
	if err != nil {
		return err
	}
	if err := s.enqueue(func() error { return s.d.copyOn(s, "async copy DtoH", s.d.dtoh(dst, src)) }); err != nil {
		return err
	}
	if pageable { // returns complete (pageable.go)
		return s.drain()
	}
	return nil
}

func (s *stream) CopyDtoDAsync(dst, src devarray.Ptr, n int64) error {
	return s.copyDtoD(false, dst, src, n)
}

func (s *stream) copyDtoD(pt bool, dst, src devarray.Ptr, n int64) error {
	if err := s.checkOp(pt, opSpec{kind: "async copy DtoD", accesses: []access{devBytes(src, n, false), devBytes(dst, n, true)}}); err != nil {
		return err
	}
	return s.enqueue(func() error { return s.d.copyOn(s, "async copy DtoD", s.d.dtod(dst, src, n)) })
}

func (s *stream) Memcpy2DAsync(p devarray.Memcpy2D) error { return s.memcpy2D(false, p) }

func (s *stream) memcpy2D(pt bool, p devarray.Memcpy2D) error {
	if s.d.check != nil {
		if err := s.checkOp(pt, s.d.pitchedOp("async copy 2D", as3D(p))); err != nil {
			return err
		}
	}
	return s.pitched(as3D(p), func() error {
		return s.enqueue(func() error { return s.d.copyOn(s, "async copy 2D", s.d.memcpy2D(p)) })
	})
}

func (s *stream) Memcpy3DAsync(p devarray.Memcpy3D) error { return s.memcpy3D(false, p) }

func (s *stream) memcpy3D(pt bool, p devarray.Memcpy3D) error {
	if s.d.check != nil {
		if err := s.checkOp(pt, s.d.pitchedOp("async copy 3D", p)); err != nil {
			return err
		}
	}
	return s.pitched(p, func() error {
		return s.enqueue(func() error { return s.d.copyOn(s, "async copy 3D", s.d.memcpy3D(p)) })
	})
}

// pitched queues a pitched copy (queue) with the rules for pageable host
// memory (pageable.go): it waits for the stream before reading pageable
// memory, and returns once complete when writing it. The source is not
// staged: a pitched source's rows lie apart, and the caller keeps them
// until the stream passes the copy, as for any async copy.
func (s *stream) pitched(p devarray.Memcpy3D, queue func() error) error {
	from, to, err := s.d.pageableSides("async pitched copy", p)
	if err != nil {
		return err
	}
	if from {
		if err := s.drain(); err != nil {
			return err
		}
	}
	if err := queue(); err != nil {
		return err
	}
	if to {
		return s.drain()
	}
	return nil
}

func (s *stream) MemsetAsync(dst devarray.Ptr, value byte, n int64) error {
	return s.memset(false, dst, value, n)
}

func (s *stream) memset(pt bool, dst devarray.Ptr, value byte, n int64) error {
	if err := s.checkOp(pt, opSpec{kind: "async memset", accesses: []access{devBytes(dst, n, true)}}); err != nil {
		return err
	}
	return s.enqueue(func() error { return s.d.memset(dst, value, n) })
}

// checkOp judges o, queued on s (pt: on the calling thread's per-thread
// default stream), with the stream race checker, if it is on.
func (s *stream) checkOp(pt bool, o opSpec) error {
	if s.d.check == nil {
		return nil
	}
	o.l, o.perThread = s.lane, pt
	return s.d.check.check(o)
}

// Record records e at this point of the stream: e completes when the work
// enqueued before it is done.
func (s *stream) Record(e driver.Event) error { return s.record(false, e) }

func (s *stream) record(pt bool, e driver.Event) error {
	ev, ok := e.(*event)
	if !ok || ev.d != s.d {
		return fmt.Errorf("sim: record: the event is not from this device: %w", driver.ErrInvalidValue)
	}
	var clock vclock
	if s.d.check != nil {
		clock = s.d.check.record(s.lane, pt)
	}
	mark, err := ev.arm(clock)
	if err != nil {
		return err
	}
	mark.pools = s.d.pools.capture(s)
	mark.logical = s.logical.mark() + 1 // the work queued before it, and the recording
	if err := s.enqueue(func() error { s.markErr(mark); mark.completeAt(s.clock.startAt); return nil }); err != nil {
		mark.complete()
		return err
	}
	return nil
}

// markErr gives a recording that the stream has reached the first error of
// the stream's work since the recording before it: an event synchronize
// "may also return error codes from previous, asynchronous launches"
// (cuEventSynchronize), so a wait for an event after a failed copy reports
// the copy's failure.
func (s *stream) markErr(m *mark) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	m.s, m.err, m.errGen = s, s.since, s.sinceGen
	s.since, s.sinceGen = nil, 0
}

// reported clears the stream's error once an event synchronize has
// returned it (gen, its errGen, 0 when the event's error is not the
// stream's), so that the stream's Synchronize does not report it again.
func (s *stream) reported(gen uint64) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if gen != 0 && s.err != nil && s.errGen == gen {
		s.err = nil
	}
}

// WaitEvent makes work enqueued after it wait until e's latest record
// completes. The event may be of another sim device: "h_event may be from
// a different context or device than h_stream" (cuStreamWaitEvent). The
// stream race checker, which keeps one device's order, does not see such
// a wait.
func (s *stream) WaitEvent(e driver.Event) error { return s.waitEvent(false, e) }

func (s *stream) waitEvent(pt bool, e driver.Event) error {
	ev, ok := e.(*event)
	if !ok {
		return fmt.Errorf("sim: wait event: the event is not a sim event: %w", driver.ErrInvalidValue)
	}
	ev.mu.Lock()
	m, closed := ev.cur, ev.closed
	ev.mu.Unlock()
	if closed {
		return fmt.Errorf("sim: wait event: %w", driver.ErrClosed)
	}
	if s.d.check != nil && ev.d == s.d {
		s.d.check.wait(s.lane, pt, m.clock)
	}
	if ev.d == s.d {
		s.d.pools.waited(s, m.pools)
	}
	return s.enqueueMarker(func() error { <-m.done; return nil })
}

// Synchronize waits for the work enqueued so far and returns, and clears,
// the first error that work returned; after a fault (Device.FailFault) it
// returns the fault, every time.
func (s *stream) Synchronize() error { return s.synchronize(false) }

func (s *stream) synchronize(pt bool) error {
	upTo := s.logical.mark()
	if err := s.drain(); err != nil {
		return err
	}
	s.logical.synchronized(upTo)
	if s.d.check != nil {
		s.d.check.hostWaitsFor(s.lane, pt)
	}
	s.d.pools.synchronized(s, nil)
	if err := s.d.checkFault("stream synchronize"); err != nil {
		return err
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	err := s.err
	s.err = nil
	return err
}

// drain waits until the stream has passed the work enqueued so far. After
// a fault it still waits (the work behind the fault fails at once): a
// kernel or copy that was running when the device faulted may still touch
// memory, which the caller may reuse once Synchronize returns.
func (s *stream) drain() error {
	s.qmu.Lock()
	closed := s.closed
	s.qmu.Unlock()
	if closed {
		return fmt.Errorf("sim: stream: %w", driver.ErrClosed)
	}
	if s.pending.Load() == 0 {
		return nil
	}
	// The marker's finished, not its run: closed after the stream stops
	// counting it, so that a query right after a synchronize ("Returns
	// CUDA_SUCCESS if all operations in the stream specified by hStream
	// have completed", cuStreamQuery) finds no work pending.
	done := make(chan struct{})
	if err := s.pushOp(streamOp{run: func() error { return nil }, finished: done}, false); err != nil {
		return err
	}
	<-done
	return nil
}

// isClosed reports whether Close was called.
func (s *stream) isClosed() bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.closed
}

// Handle returns the stream's number, unique on the device and above the
// default stream handles 1 and 2.
func (s *stream) Handle() uintptr { return s.handle }

// Close waits for the stream's work, stops its goroutine and returns the
// first error of the work not yet reported. Closing twice is harmless.
func (s *stream) Close() error {
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		return nil
	}
	s.closed = true
	close(s.ops)
	s.qmu.Unlock()
	<-s.done
	if s.d.check != nil {
		s.d.check.hostWaitsFor(s.lane, false)
	}
	s.d.pools.synchronized(s, nil) // Close waited for its frees
	s.d.closedUnsynchronized(s)
	s.d.detachManaged(s)
	s.d.streamsMu.Lock()
	delete(s.d.streams, s)
	s.d.streamsMu.Unlock()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if err := s.d.checkFault("stream close"); err != nil {
		return err // the stream is released all the same
	}
	return s.err
}

// ExternalStream finds the live stream with the given handle; Close of the
// result does not close it. Both default streams, 1 and 2, are the
// device's default stream, the one its synchronous calls and kernels
// launched without a stream run on.
func (d *Device) ExternalStream(handle uintptr) (driver.Stream, error) {
	if d.Closed() {
		return nil, fmt.Errorf("sim: external stream %#x: %w", handle, driver.ErrClosed)
	}
	if handle == driver.PerThreadDefaultStream {
		if d.check != nil {
			return perThreadStream{d.legacy}, nil
		}
		handle = driver.LegacyDefaultStream
	}
	d.streamsMu.Lock()
	defer d.streamsMu.Unlock()
	for s := range d.streams {
		if s.handle == handle {
			return borrowedStream{s}, nil
		}
	}
	return nil, fmt.Errorf("sim: stream handle %#x: not a live stream of %v: %w", handle, d.DeviceID(), driver.ErrInvalidValue)
}

// borrowedStream is another owner's stream: Close leaves it running.
type borrowedStream struct{ *stream }

func (borrowedStream) Close() error { return nil }

// Pause holds stream s (a sim stream) at this point: work enqueued on it
// afterwards waits until resume is called. Tests use it to keep a stream
// from passing an event, as a long kernel would on a GPU. Calling resume
// more than once is harmless.
func Pause(s driver.Stream) (resume func(), err error) {
	st, ok := simStream(s)
	if !ok {
		return nil, fmt.Errorf("sim: pause: not a sim stream: %w", driver.ErrInvalidValue)
	}
	gate := make(chan struct{})
	if err := st.enqueueMarker(func() error { <-gate; return nil }); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }, nil
}

// simStream returns the sim stream behind s, borrowed or not.
func simStream(s driver.Stream) (*stream, bool) {
	switch st := s.(type) {
	case *stream:
		return st, true
	case borrowedStream:
		return st.stream, true
	case perThreadStream:
		return st.stream, true
	}
	return nil, false
}
