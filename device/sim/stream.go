package sim

import (
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// streamDepth is how many operations a stream queues before an enqueue
// blocks, like the driver's launch queue.
const streamDepth = 1024

// stream runs its operations in order on its own goroutine.
type stream struct {
	d      *Device
	handle uintptr
	ops    chan func() error
	done   chan struct{} // closed when the goroutine exits

	qmu    sync.Mutex // guards closed and sends on ops
	closed bool

	errMu sync.Mutex // guards err; never held while waiting on the queue
	err   error      // first error of the work since the last Synchronize
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
	s := &stream{d: d, ops: make(chan func() error, streamDepth), done: make(chan struct{})}
	d.streamsMu.Lock()
	d.lastHandle++
	s.handle = d.lastHandle
	d.streams[s] = struct{}{}
	d.streamsMu.Unlock()
	go s.run()
	return s, nil
}

func (s *stream) run() {
	defer close(s.done)
	for op := range s.ops {
		if err := op(); err != nil {
			s.errMu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.errMu.Unlock()
		}
	}
}

// enqueue adds op to the stream, or fails if the stream is closed.
func (s *stream) enqueue(op func() error) error {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.closed {
		return fmt.Errorf("sim: stream: %w", driver.ErrClosed)
	}
	s.ops <- op
	return nil
}

func (s *stream) CopyHtoDAsync(dst devarray.Ptr, src []byte) error {
	return s.enqueue(func() error { return s.d.runCopy("async copy HtoD", s.d.htod(dst, src)) })
}

func (s *stream) CopyDtoHAsync(dst []byte, src devarray.Ptr) error {
	return s.enqueue(func() error { return s.d.runCopy("async copy DtoH", s.d.dtoh(dst, src)) })
}

func (s *stream) CopyDtoDAsync(dst, src devarray.Ptr, n int64) error {
	return s.enqueue(func() error { return s.d.runCopy("async copy DtoD", s.d.dtod(dst, src, n)) })
}

func (s *stream) Memcpy2DAsync(p devarray.Memcpy2D) error {
	return s.enqueue(func() error { return s.d.runCopy("async copy 2D", s.d.memcpy2D(p)) })
}

func (s *stream) Memcpy3DAsync(p devarray.Memcpy3D) error {
	return s.enqueue(func() error { return s.d.runCopy("async copy 3D", s.d.memcpy3D(p)) })
}

func (s *stream) MemsetAsync(dst devarray.Ptr, value byte, n int64) error {
	return s.enqueue(func() error { return s.d.Memset(dst, value, n) })
}

// Record records e at this point of the stream: e completes when the work
// enqueued before it is done.
func (s *stream) Record(e driver.Event) error {
	ev, ok := e.(*event)
	if !ok || ev.d != s.d {
		return fmt.Errorf("sim: record: the event is not from this device: %w", driver.ErrInvalidValue)
	}
	mark, err := ev.arm()
	if err != nil {
		return err
	}
	if err := s.enqueue(func() error { mark.complete(); return nil }); err != nil {
		mark.complete()
		return err
	}
	return nil
}

// WaitEvent makes work enqueued after it wait until e's latest record completes.
func (s *stream) WaitEvent(e driver.Event) error {
	ev, ok := e.(*event)
	if !ok || ev.d != s.d {
		return fmt.Errorf("sim: wait event: the event is not from this device: %w", driver.ErrInvalidValue)
	}
	m := ev.latest()
	return s.enqueue(func() error { <-m.done; return nil })
}

// Synchronize waits for the work enqueued so far and returns, and clears,
// the first error that work returned.
func (s *stream) Synchronize() error {
	done := make(chan struct{})
	if err := s.enqueue(func() error { close(done); return nil }); err != nil {
		return err
	}
	<-done
	s.errMu.Lock()
	defer s.errMu.Unlock()
	err := s.err
	s.err = nil
	return err
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
	s.d.streamsMu.Lock()
	delete(s.d.streams, s)
	s.d.streamsMu.Unlock()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// ExternalStream finds the live stream with the given handle; Close of the
// result does not close it. The default streams 1 and 2 have no queued work
// on sim (its synchronous calls finish before they return), so they are
// given as a new empty stream that Close ends.
func (d *Device) ExternalStream(handle uintptr) (driver.Stream, error) {
	if handle == driver.LegacyDefaultStream || handle == driver.PerThreadDefaultStream {
		return d.NewStream()
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
	st, ok := s.(*stream)
	if !ok {
		return nil, fmt.Errorf("sim: pause: not a sim stream: %w", driver.ErrInvalidValue)
	}
	gate := make(chan struct{})
	if err := st.enqueue(func() error { <-gate; return nil }); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }, nil
}
