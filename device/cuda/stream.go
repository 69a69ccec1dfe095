//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// stream is a CUDA stream. The ledger records an async copy when it is
// enqueued, with no duration: time device work with events.
type stream struct {
	d        *Device
	s        cu.Stream
	borrowed bool // from ExternalStream: Close does not destroy it

	mu      sync.Mutex
	closed  bool
	pending []*hostPin // Go memory of queued copies, oldest first
}

// hostPin keeps the pageable Go memory that a queued copy reads or writes
// alive and in place (runtime.Pinner) until ev, recorded after the copy,
// has completed. The driver may use that memory after the call returns (a
// GPU that reads and writes pageable memory, HMM or ATS, does), where the
// garbage collector cannot see it.
type hostPin struct {
	pin     runtime.Pinner
	ev      cu.Event
	tracked bool // ev was recorded and the stream holds it
}

// livePins holds every hostPin not yet released: a Pinner that becomes
// unreachable while pinned makes the runtime panic, so a device dropped
// without Close keeps that memory instead.
var livePins struct {
	sync.Mutex
	m map[*hostPin]struct{}
}

// pinHost pins the pageable Go memory among bufs (page-locked memory of
// this device needs nothing, and C memory cannot move); nil when none.
func (s *stream) pinHost(bufs ...[]byte) *hostPin {
	var h *hostPin
	for _, b := range bufs {
		if len(b) == 0 || s.d.hostPath(b) != accounting.PathDirect {
			continue
		}
		if h == nil {
			h = &hostPin{}
		}
		h.pin.Pin(unsafe.SliceData(b))
	}
	if h != nil {
		livePins.Lock()
		if livePins.m == nil {
			livePins.m = make(map[*hostPin]struct{})
		}
		livePins.m[h] = struct{}{}
		livePins.Unlock()
	}
	return h
}

// release unpins h and destroys its event, with the context current.
func (h *hostPin) release() {
	if h.tracked {
		cu.DestroyEvent(&h.ev)
	}
	h.pin.Unpin()
	livePins.Lock()
	delete(livePins.m, h)
	livePins.Unlock()
}

// enqueueCopy is enqueue for a copy to or from host memory bufs: the
// pageable Go memory among them stays pinned until the copy is done.
func (s *stream) enqueueCopy(call caller, op string, bufs [][]byte, f func() error) error {
	h := s.pinHost(bufs...)
	if h == nil {
		return s.enqueueBy(call, op, f)
	}
	err := s.enqueueBy(call, op, func() error {
		if err := f(); err != nil {
			return err
		}
		return s.track(h)
	})
	if !h.tracked {
		h.release()
	}
	return err
}

// track records an event after a queued copy that holds h, in enqueue. With
// no event to tell when the copy is done, it waits for the stream.
func (s *stream) track(h *hostPin) error {
	ev, err := cu.MakeEvent(cu.DisableTiming)
	if err == nil {
		if err = ev.Record(s.s); err != nil {
			cu.DestroyEvent(&ev)
		}
	}
	if err != nil {
		return errors.Join(fromCu(s.s.Synchronize()), fromCu(err))
	}
	h.ev, h.tracked = ev, true
	s.pending = append(s.pending, h)
	return nil
}

// reap lets go of the memory of the copies that are done, in enqueue.
func (s *stream) reap() {
	for len(s.pending) > 0 {
		h := s.pending[0]
		if errors.Is(fromCu(h.ev.Query()), driver.ErrNotReady) {
			return
		}
		h.release()
		s.pending[0] = nil
		s.pending = s.pending[1:]
	}
}

// waitPins waits for every copy that holds memory and lets go of it, with
// the context current and s.mu held.
func (s *stream) waitPins() error {
	var first error
	for _, h := range s.pending {
		if err := fromCu(h.ev.Synchronize()); err != nil && first == nil {
			first = err
		}
		h.release()
	}
	s.pending = nil
	return first
}

var _ driver.Stream = (*stream)(nil)

// NewStream creates a stream (cuStreamCreate, default flags: it orders with
// the legacy default stream that the synchronous copies use).
func (d *Device) NewStream() (driver.Stream, error) {
	if err := d.closedErr("new stream"); err != nil {
		return nil, err
	}
	s := &stream{d: d}
	err := d.call(func() error {
		var e error
		s.s, e = cu.MakeStream(cu.DefaultStream)
		return fromCu(e)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: new stream: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.callAlways(func() error { return fromCu(s.s.Destroy()) })
		return nil, fmt.Errorf("cuda: new stream: %w", driver.ErrClosed)
	}
	d.streams[s] = struct{}{}
	return s, nil
}

// caller runs f with the device's context current: Device.call, or a
// batch's call (batch.go).
type caller func(f func() error) error

// enqueue runs f with the context current, unless the stream is closed.
func (s *stream) enqueue(op string, f func() error) error { return s.enqueueBy(s.d.call, op, f) }

// enqueueBy is enqueue with the context made current by call.
func (s *stream) enqueueBy(call caller, op string, f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("cuda: %s: %w", op, driver.ErrClosed)
	}
	if err := call(func() error { s.reap(); return f() }); err != nil {
		return fmt.Errorf("cuda: %s: %w", op, err)
	}
	return nil
}

func (s *stream) CopyHtoDAsync(dst devarray.Ptr, src []byte) error {
	return s.copyHtoDAsync(s.d.call, dst, src)
}

func (s *stream) copyHtoDAsync(call caller, dst devarray.Ptr, src []byte) error {
	path, err := s.d.hostSide("cuda: async copy HtoD", src)
	if err != nil {
		return err
	}
	if len(src) > 0 {
		err := s.enqueueCopy(call, "async copy HtoD", [][]byte{src}, func() error {
			return fromCu(cu.MemcpyHtoDAsync(cu.DevicePtr(dst), ptrOf(src), int64(len(src)), s.s))
		})
		if err != nil {
			return s.d.outside(err, driver.Range{Ptr: dst, N: int64(len(src))})
		}
	}
	s.d.ledger.RecordCopy(accounting.HtoD, path, int64(len(src)), 0)
	return nil
}

func (s *stream) CopyDtoHAsync(dst []byte, src devarray.Ptr) error {
	return s.copyDtoHAsync(s.d.call, dst, src)
}

func (s *stream) copyDtoHAsync(call caller, dst []byte, src devarray.Ptr) error {
	path, err := s.d.hostSide("cuda: async copy DtoH", dst)
	if err != nil {
		return err
	}
	if len(dst) > 0 {
		err := s.enqueueCopy(call, "async copy DtoH", [][]byte{dst}, func() error {
			return fromCu(cu.MemcpyDtoHAsync(ptrOf(dst), cu.DevicePtr(src), int64(len(dst)), s.s))
		})
		if err != nil {
			return s.d.outside(err, driver.Range{Ptr: src, N: int64(len(dst))})
		}
	}
	s.d.ledger.RecordCopy(accounting.DtoH, path, int64(len(dst)), 0)
	return nil
}

func (s *stream) CopyDtoDAsync(dst, src devarray.Ptr, n int64) error {
	return s.copyDtoDAsync(s.d.call, dst, src, n)
}

func (s *stream) copyDtoDAsync(call caller, dst, src devarray.Ptr, n int64) error {
	if n < 0 {
		return fmt.Errorf("cuda: async copy DtoD %d bytes: %w", n, driver.ErrInvalidValue)
	}
	if n > 0 {
		err := s.enqueueBy(call, "async copy DtoD", func() error {
			return fromCu(cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), n, s.s))
		})
		if err != nil {
			return s.d.outside(err, driver.Range{Ptr: dst, N: n}, driver.Range{Ptr: src, N: n})
		}
	}
	s.d.ledger.RecordCopy(accounting.DtoD, accounting.PathD2D, n, 0)
	return nil
}

func (s *stream) Memcpy2DAsync(p devarray.Memcpy2D) error {
	return s.memcpy("async copy 2D", as3D(p))
}

func (s *stream) Memcpy3DAsync(p devarray.Memcpy3D) error {
	return s.memcpy("async copy 3D", p)
}

func (s *stream) memcpy(op string, p devarray.Memcpy3D) error {
	c, err := s.d.prepare3D("cuda: "+op, p)
	if err != nil {
		return prefixed("cuda: "+op, err)
	}
	if err := s.enqueueCopy(s.d.call, op, [][]byte{p.Dst.Host, p.Src.Host}, func() error { return c.run(s) }); err != nil {
		return err
	}
	s.d.ledger.RecordCopy(c.dir, c.path, c.bytes(), 0)
	return nil
}

func (s *stream) MemsetAsync(dst devarray.Ptr, value byte, n int64) error {
	if n < 0 {
		return fmt.Errorf("cuda: async memset %d bytes: %w", n, driver.ErrInvalidValue)
	}
	err := s.enqueue("async memset", func() error {
		return fromCu(cu.MemsetD8Async(cu.DevicePtr(dst), value, n, s.s))
	})
	if err != nil {
		return s.d.outside(err, driver.Range{Ptr: dst, N: n})
	}
	s.d.ledger.RecordMemset(n, 0)
	return nil
}

// Record records e on the stream (cuEventRecord).
func (s *stream) Record(e driver.Event) error { return s.record(s.d.call, e) }

func (s *stream) record(call caller, e driver.Event) error {
	ev, ok := e.(*event)
	if !ok || ev.d != s.d {
		return fmt.Errorf("cuda: record: the event is not from this device: %w", driver.ErrInvalidValue)
	}
	return ev.whileOpen("record", func() error {
		return s.enqueueBy(call, "record event", func() error { return fromCu(ev.ev.Record(s.s)) })
	})
}

// WaitEvent makes later work on the stream wait for e (cuStreamWaitEvent).
func (s *stream) WaitEvent(e driver.Event) error {
	ev, ok := e.(*event)
	if !ok {
		return fmt.Errorf("cuda: wait event: the event is not a cuda event: %w", driver.ErrInvalidValue)
	}
	return ev.whileOpen("wait", func() error {
		return s.enqueue("wait event", func() error { return fromCu(s.s.Wait(ev.ev, 0)) })
	})
}

// Synchronize waits for the stream's work (cuStreamSynchronize).
func (s *stream) Synchronize() error {
	return s.enqueue("stream synchronize", func() error {
		err := fromCu(s.s.Synchronize())
		return errors.Join(err, s.waitPins())
	})
}

// Handle returns the CUstream.
func (s *stream) Handle() uintptr { return uintptr(unsafe.Pointer(s.s.C())) }

// ExternalStream wraps a CUstream another library made in this device's
// context, or a default stream (1, 2). The driver has no call that checks
// a stream handle, so a garbage handle fails at its first use, with the
// driver's error. Close releases only the wrapper.
func (d *Device) ExternalStream(handle uintptr) (driver.Stream, error) {
	if err := d.closedErr("external stream"); err != nil {
		return nil, err
	}
	if handle == 0 {
		return nil, fmt.Errorf("cuda: external stream 0: ambiguous, use 1 for the legacy default stream: %w", driver.ErrInvalidValue)
	}
	s := &stream{d: d, s: streamFromHandle(handle), borrowed: true}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("cuda: external stream: %w", driver.ErrClosed)
	}
	d.streams[s] = struct{}{} // Close lets go of the memory its copies hold
	return s, nil
}

// Close waits for the stream's work and destroys it; a stream of
// ExternalStream only waits for the copies made through it that use Go
// memory, and stays. Closing twice is harmless.
func (s *stream) Close() error {
	s.d.mu.Lock()
	if s.d.streams != nil {
		delete(s.d.streams, s)
	}
	s.d.mu.Unlock()
	return s.destroy()
}

func (s *stream) destroy() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.d.callAlways(func() error {
		if s.borrowed {
			return s.waitPins()
		}
		err := fromCu(s.s.Synchronize())
		return errors.Join(err, s.waitPins(), fromCu(s.s.Destroy()))
	})
}

// event is a CUDA event with timing.
type event struct {
	d  *Device
	ev cu.Event

	mu     sync.Mutex
	closed bool
}

var _ driver.Event = (*event)(nil)

// NewEvent creates an event that records time (cuEventCreate, default flags).
func (d *Device) NewEvent() (driver.Event, error) {
	e := &event{d: d}
	err := d.call(func() error {
		var err error
		e.ev, err = cu.MakeEvent(cu.DefaultEvent)
		return fromCu(err)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: new event: %w", err)
	}
	return e, nil
}

func (e *event) do(op string, f func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("cuda: event %s: %w", op, driver.ErrClosed)
	}
	if err := e.d.call(f); err != nil {
		return fmt.Errorf("cuda: event %s: %w", op, err)
	}
	return nil
}

// whileOpen runs f, which uses the event, unless the event is closed: the
// driver knows a destroyed event only as an invalid handle.
func (e *event) whileOpen(op string, f func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("cuda: %s: event: %w", op, driver.ErrClosed)
	}
	return f()
}

// Synchronize waits for the event (cuEventSynchronize), with no context
// switch where the thread has one current (doAnyContext).
func (e *event) Synchronize() error {
	return e.doAnyContext("synchronize", func() error { return fromCu(e.ev.Synchronize()) })
}

// Query reports whether the event has completed (cuEventQuery), with no
// context switch where the thread has one current (doAnyContext).
func (e *event) Query() (bool, error) {
	err := e.doAnyContext("query", func() error { return fromCu(e.ev.Query()) })
	if errors.Is(err, driver.ErrNotReady) {
		return false, nil
	}
	return err == nil, err
}

// doAnyContext runs f, a cuEventSynchronize or cuEventQuery, first with
// whatever context the calling thread has current: "cudaEventSynchronize()
// and cudaEventQuery() will succeed even if the input event is associated
// to a device that is different from the current device" (CUDA C++
// Programming Guide, Multi-Device System, Stream and Event Behavior), so
// they need not switch. What the driver answers with no context current
// is not documented: any error but "not ready" is asked again with the
// device's context current, and that answer stands (as do does).
func (e *event) doAnyContext(op string, f func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("cuda: event %s: %w", op, driver.ErrClosed)
	}
	if e.d.isClosed.Load() {
		return fmt.Errorf("cuda: event %s: device %v: %w", op, e.d.DeviceID(), driver.ErrClosed)
	}
	if err := f(); err == nil || errors.Is(err, driver.ErrNotReady) {
		return err
	}
	if err := e.d.call(f); err != nil {
		return fmt.Errorf("cuda: event %s: %w", op, err)
	}
	return nil
}

// Elapsed returns the time between start's record and this event's
// (cuEventElapsedTime, about 0.5 µs resolution).
func (e *event) Elapsed(start driver.Event) (time.Duration, error) {
	s, ok := start.(*event)
	if !ok || s.d != e.d {
		return 0, fmt.Errorf("cuda: elapsed: the start event is not from this device: %w", driver.ErrInvalidValue)
	}
	if err := s.whileOpen("elapsed", func() error { return nil }); err != nil {
		return 0, err
	}
	var ms float64
	err := e.do("elapsed", func() error {
		var err error
		ms, err = s.ev.Elapsed(e.ev)
		return fromCu(err)
	})
	if err != nil {
		return 0, err
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

func (e *event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.d.callAlways(func() error { return fromCu(cu.DestroyEvent(&e.ev)) })
}
