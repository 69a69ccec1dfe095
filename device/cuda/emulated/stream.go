//go:build cuda && cudaemu && linux

package emulated

import (
	"sync/atomic"
	"time"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// Stream and event flags (cuda.h's CUstream_flags and CUevent_flags).
const (
	streamNonBlocking    = 0x1
	eventDisableTiming   = 0x2
	eventFlagsMask       = 0xf
	streamWaitFlagsMask  = 0x1
	streamCreateFlagMask = 0x1
)

// stream is a CUstream: a sim stream, or a context's legacy or per-thread
// default stream.
type stream struct {
	handle      uintptr
	ctx         *context
	s           driver.Stream
	legacy      bool // the legacy default stream (handle 0 or CU_STREAM_LEGACY)
	perThread   bool // an OS thread's CU_STREAM_PER_THREAD
	nonBlocking bool // made with CU_STREAM_NON_BLOCKING
}

// run queues work on the stream after the legacy stream's ordering with
// blocking streams (context.order), then work itself.
func (s *stream) run(work func(driver.Stream) error) cuResult {
	if err := s.ctx.order(s); err != nil {
		return s.ctx.codeOf(err)
	}
	if err := work(s.s); err != nil {
		return s.ctx.codeOf(err)
	}
	return success
}

// wait waits for the work queued so far on the stream.
func (s *stream) wait() cuResult {
	if err := s.s.Synchronize(); err != nil {
		return s.ctx.codeOf(err)
	}
	return success
}

func streamCreate(flags uint32) (uintptr, cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, r
	}
	if flags&^streamCreateFlagMask != 0 {
		return 0, errInvalidValue
	}
	newStream := dev.NewStream
	if flags&streamNonBlocking != 0 {
		newStream = dev.NewNonBlockingStream // the stream race checker holds it to CUDA's rule
	}
	st, err := newStream()
	if err != nil {
		return 0, c.codeOf(err)
	}
	if err := c.newStreamWaits(st); err != nil {
		st.Close()
		return 0, c.codeOf(err)
	}
	s := &stream{ctx: c, s: st, nonBlocking: flags&streamNonBlocking != 0}
	s.handle = drv.newHandle(s)
	c.mu.Lock()
	if c.streams == nil {
		c.mu.Unlock()
		drv.forget(s.handle)
		st.Close()
		return 0, errContextIsDestroyed
	}
	c.streams[s] = struct{}{}
	c.owned[s.handle] = struct{}{}
	c.mu.Unlock()
	return s.handle, success
}

// streamOf returns the stream of handle h in the current context.
func streamOf(h uintptr) (*stream, cuResult) {
	c, _, r := current()
	if r != success {
		return nil, r
	}
	return c.stream(h)
}

// streamDestroy releases a stream. As cuStreamDestroy does, it returns at
// once: work still queued on it completes first, then its resources go.
func streamDestroy(h uintptr) cuResult {
	s, ok := lookup[*stream](h)
	if !ok {
		return destroyedStream(h)
	}
	c := s.ctx
	if r := c.usable(); r != success && r != errContextIsDestroyed {
		// After a sticky error "any further CUDA work will return the same
		// error" (cuda.h, CUDA_ERROR_ILLEGAL_ADDRESS): the strict reading is
		// that cuStreamDestroy returns it and does nothing, a guess; the
		// stream goes with its context.
		return r
	}
	drv.forget(h)
	c.mu.Lock()
	if c.streams != nil {
		delete(c.streams, s)
	}
	c.mu.Unlock()
	go s.s.Close()
	return success
}

func streamSynchronize(h uintptr) cuResult {
	s, r := streamOf(h)
	if r != success {
		return r
	}
	return s.wait()
}

func streamQuery(h uintptr) cuResult {
	s, r := streamOf(h)
	if r != success {
		return r
	}
	if !sim.Idle(s.s) {
		return errNotReady
	}
	return success
}

func streamWaitEvent(h, e uintptr, flags uint32) cuResult {
	s, r := streamOf(h)
	if r != success {
		return r
	}
	ev, ok := lookup[*event](e)
	if !ok {
		return destroyedEvent(e)
	}
	// "h_event may be from a different context or device than h_stream"
	// (cuStreamWaitEvent): a stream waits for another device's event too.
	if flags&^streamWaitFlagsMask != 0 {
		return errInvalidHandle
	}
	return s.run(func(st driver.Stream) error { return st.WaitEvent(ev.e) })
}

// event is a CUevent.
type event struct {
	handle   uintptr
	ctx      *context
	e        driver.Event
	timing   bool
	recorded atomic.Bool
}

func eventCreate(flags uint32) (uintptr, cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, r
	}
	if flags&^eventFlagsMask != 0 {
		return 0, errInvalidValue
	}
	e, err := dev.NewEvent()
	if err != nil {
		return 0, c.codeOf(err)
	}
	ev := &event{ctx: c, e: e, timing: flags&eventDisableTiming == 0}
	ev.handle = drv.newHandle(ev)
	c.own(ev.handle)
	return ev.handle, success
}

// eventOf returns the event of handle h, if its context is current and usable.
func eventOf(h uintptr) (*event, cuResult) {
	c, _, r := current()
	if r != success {
		return nil, r
	}
	ev, ok := lookup[*event](h)
	if !ok {
		return nil, destroyedEvent(h)
	}
	if ev.ctx != c {
		return nil, errInvalidHandle
	}
	return ev, success
}

func eventDestroy(h uintptr) cuResult {
	ev, r := eventOf(h)
	if r != success {
		return r
	}
	drv.forget(h)
	ev.e.Close()
	return success
}

func eventRecord(h, sh uintptr) cuResult {
	ev, r := eventOf(h)
	if r != success {
		return r
	}
	s, r := ev.ctx.stream(sh)
	if r != success {
		return r
	}
	ev.recorded.Store(true)
	return s.run(func(st driver.Stream) error { return st.Record(ev.e) })
}

// eventOfAnyContext returns the event of handle h for cuEventQuery and
// cuEventSynchronize, which need a context current but not the event's:
// "cudaEventSynchronize() and cudaEventQuery() will succeed even if the
// input event is associated to a device that is different from the
// current device" (CUDA C++ Programming Guide, Multi-Device System, Stream
// and Event Behavior). With no context current the guide does not say,
// as the runtime always has one: CUDA_ERROR_INVALID_CONTEXT is a guess,
// the strict one (conformance: "event sync and query with no context
// current" logs what a GPU answers).
func eventOfAnyContext(h uintptr) (*event, cuResult) {
	if _, _, r := current(); r != success {
		return nil, r
	}
	ev, ok := lookup[*event](h)
	if !ok {
		return nil, destroyedEvent(h)
	}
	if r := ev.ctx.usable(); r != success {
		return nil, r
	}
	return ev, success
}

func eventQuery(h uintptr) cuResult {
	ev, r := eventOfAnyContext(h)
	if r != success {
		return r
	}
	done, err := ev.e.Query()
	if err != nil {
		return ev.ctx.codeOf(err)
	}
	if !done {
		return errNotReady
	}
	return success
}

func eventSynchronize(h uintptr) cuResult {
	ev, r := eventOfAnyContext(h)
	if r != success {
		return r
	}
	if err := ev.e.Synchronize(); err != nil {
		return ev.ctx.codeOf(err)
	}
	return success
}

// eventElapsed is cuEventElapsedTime: both events recorded, with timing,
// and complete (CUDA_ERROR_NOT_READY otherwise).
func eventElapsed(start, end uintptr) (time.Duration, cuResult) {
	a, r := eventOf(start)
	if r != success {
		return 0, r
	}
	b, r := eventOf(end)
	if r != success {
		return 0, r
	}
	if !a.timing || !b.timing || !a.recorded.Load() || !b.recorded.Load() {
		return 0, errInvalidHandle
	}
	d, err := b.e.Elapsed(a.e)
	if err != nil {
		return 0, a.ctx.codeOf(err)
	}
	return d, success
}
