//go:build cuda && cudaemu && linux

package emulated

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// The flags of a primary context (cuda.h's CUctx_flags).
const (
	ctxSchedMask       = 0x07
	ctxBlockingSync    = 0x04
	ctxMapHost         = 0x08
	ctxLMemResizeToMax = 0x10
	ctxFlagsMask       = 0x1f
)

// device is one emulated GPU.
type device struct {
	ordinal int
	primary *context
	spoiled atomic.Int32                // the sticky result that ended the process's use of the device, 0 before one
	report  atomic.Pointer[faultReport] // the kernel fault that spoiled it, if one did (Detail)
}

// spoil records that a sticky error (700, 716, 719) ended the process's use
// of the device: cuda.h says of each, "This leaves the process in an
// inconsistent state and any further CUDA work will return the same error.
// To continue using CUDA, the process must be terminated and relaunched."
// So neither a reset (cuDevicePrimaryCtxReset) nor the release of the last
// reference gives a fresh context: every later retain, and every call made
// with the device's context current, returns r (the first fault wins).
func (d *device) spoil(r cuResult) { d.spoiled.CompareAndSwap(0, int32(r)) }

// spoiledResult returns the sticky result that ended the process's use of
// the device, success before one.
func (d *device) spoiledResult() cuResult { return cuResult(d.spoiled.Load()) }

// context is a device's primary context. It is active while retained:
// then a sim device holds its memory, streams and faults. Releasing the
// last reference (or a reset) destroys everything made in it.
type context struct {
	handle uintptr
	dev    *device

	mu        sync.Mutex
	refs      int
	flags     uint32 // set by cuDevicePrimaryCtxSetFlags
	sim       *sim.Device
	legacy    driver.Stream
	streams   map[*stream]struct{} // streams made by cuStreamCreate
	perThread map[int]*stream      // each OS thread's CU_STREAM_PER_THREAD
	owned     map[uintptr]struct{} // handles made in this activation: streams, events, modules, functions
	sticky    atomic.Int32         // the result of the fault that spoiled the context, 0 before one
	fence     []driver.Event       // the work the last implicit synchronization fenced (implicitSync)
}

// retain adds a reference, activating the context on the first.
func (c *context) retain() cuResult {
	if r := c.dev.spoiledResult(); r != success {
		return r // see spoil: no fresh context after a sticky error
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs == 0 {
		cfg := drv.cfg
		dev, err := sim.New(sim.Config{Ordinal: c.dev.ordinal, Memory: cfg.memory, Latency: cfg.latency, FailFault: cfg.failFault, CheckStreams: cfg.check, OpenStaleIPC: true, PageableAsync: true,
			NoConcurrentManagedAccess: cfg.exclusiveManaged, PageableAccess: cfg.pageableAccess})
		if err != nil {
			return errOutOfMemory
		}
		legacy, err := dev.ExternalStream(driver.LegacyDefaultStream)
		if err != nil {
			dev.Close()
			return errUnknown
		}
		c.sim, c.legacy = dev, legacy
		c.streams, c.perThread, c.owned = make(map[*stream]struct{}), make(map[int]*stream), make(map[uintptr]struct{})
		c.sticky.Store(0)
	}
	c.refs++
	return success
}

// release drops a reference; the last one destroys the context's work and memory.
func (c *context) release() cuResult {
	c.mu.Lock()
	if c.refs == 0 {
		c.mu.Unlock()
		return errInvalidContext
	}
	c.refs--
	if c.refs > 0 {
		c.mu.Unlock()
		return success
	}
	c.mu.Unlock()
	c.destroy()
	return success
}

// reset destroys the context whatever its references (cuDevicePrimaryCtxReset).
func (c *context) reset() {
	c.mu.Lock()
	active := c.refs > 0
	c.refs = 0
	c.mu.Unlock()
	if active {
		c.destroy()
	}
}

// destroy ends an activation: it waits for the work, frees every
// allocation (page-locked host memory too), and invalidates every handle
// made in it.
func (c *context) destroy() {
	c.mu.Lock()
	dev, owned := c.sim, c.owned
	c.sim, c.legacy, c.streams, c.perThread, c.owned, c.fence = nil, nil, nil, nil, nil, nil
	c.mu.Unlock()
	if dev == nil {
		return
	}
	if dev.Fault() != nil {
		c.dev.spoil(c.stickyResult())
	}
	drv.mu.Lock()
	for h := range owned {
		delete(drv.handles, h) // invalid with the context: not retired for reuse
	}
	kept := drv.host[:0]
	for _, h := range drv.host {
		if h.ctx != c {
			kept = append(kept, h)
		}
	}
	drv.host = kept
	drv.mu.Unlock()
	dev.Close()
}

// active returns the context's sim device, or nil when it is not active.
func (c *context) active() *sim.Device {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sim
}

// own records handle h as made in this activation.
func (c *context) own(h uintptr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owned != nil {
		c.owned[h] = struct{}{}
	}
}

// usable returns success while c is active and has not faulted, else the
// result a call on it gets.
func (c *context) usable() cuResult {
	dev := c.active()
	if dev == nil {
		return c.destroyedResult()
	}
	return c.faulted(dev)
}

// stickyResult is the result every call returns once the context faulted.
func (c *context) stickyResult() cuResult {
	if r := c.sticky.Load(); r != 0 {
		return cuResult(r)
	}
	return errIllegalAddress
}

// fault spoils the context with result r (the first fault wins).
func (c *context) fault(r cuResult) { c.sticky.CompareAndSwap(0, int32(r)) }

// faulted returns the sticky result once the context's device has faulted,
// and records that the fault ended the process's use of the device (spoil).
func (c *context) faulted(dev *sim.Device) cuResult {
	if dev.Fault() != nil {
		r := c.stickyResult()
		c.dev.spoil(r)
		return r
	}
	return success
}

// destroyedResult is what a call with c current gets once c is no longer
// active: the sticky result when a fault ended the process's use of the
// device (spoil), else CUDA_ERROR_CONTEXT_IS_DESTROYED.
func (c *context) destroyedResult() cuResult {
	if r := c.dev.spoiledResult(); r != success {
		return r
	}
	return errContextIsDestroyed
}

// current returns the calling thread's current context and its sim
// device, or the result the driver gives without one: no current context,
// one that is no longer active, or one that has faulted.
func current() (*context, *sim.Device, cuResult) {
	if !drv.ready() {
		return nil, nil, errNotInitialized
	}
	if inHostFunc() {
		return nil, nil, errNotPermitted
	}
	c := drv.currentContext()
	if c == nil {
		return nil, nil, errInvalidContext
	}
	dev := c.active()
	if dev == nil {
		return nil, nil, c.destroyedResult()
	}
	if r := c.faulted(dev); r != success {
		return nil, nil, r
	}
	return c, dev, success
}

// currentStream returns the calling thread's current context, its sim
// device, and the stream handle h names in it (see current and stream).
func currentStream(h uintptr) (*context, *sim.Device, *stream, cuResult) {
	c, dev, r := current()
	if r != success {
		return nil, nil, nil, r
	}
	s, r := c.stream(h)
	return c, dev, s, r
}

// stream returns the stream that handle h names in context c: 0 and
// CU_STREAM_LEGACY the legacy default stream, CU_STREAM_PER_THREAD the
// calling thread's own default stream, else a stream of c.
func (c *context) stream(h uintptr) (*stream, cuResult) {
	switch h {
	case 0, driver.LegacyDefaultStream:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.legacy == nil {
			return nil, errContextIsDestroyed
		}
		return &stream{ctx: c, s: c.legacy, legacy: true}, success
	case driver.PerThreadDefaultStream:
		tid := syscall.Gettid()
		c.mu.Lock()
		s, ok := c.perThread[tid]
		dev := c.sim
		c.mu.Unlock()
		if ok {
			return s, success
		}
		if dev == nil {
			return nil, errContextIsDestroyed
		}
		st, err := dev.NewStream()
		if err != nil {
			return nil, c.codeOf(err)
		}
		if err := c.newStreamWaits(st); err != nil {
			st.Close()
			return nil, c.codeOf(err)
		}
		s = &stream{ctx: c, s: st, perThread: true}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.perThread == nil {
			st.Close()
			return nil, errContextIsDestroyed
		}
		if prev, ok := c.perThread[tid]; ok {
			st.Close()
			return prev, success
		}
		c.perThread[tid] = s
		return s, success
	}
	s, ok := lookup[*stream](h)
	if !ok {
		return nil, destroyedStream(h)
	}
	if s.ctx != c {
		return nil, errInvalidHandle
	}
	return s, success
}

// blockingStreams returns the streams that the legacy default stream
// orders with: every stream not made CU_STREAM_NON_BLOCKING.
func (c *context) blockingStreams() []*stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*stream
	for s := range c.streams {
		if !s.nonBlocking {
			out = append(out, s)
		}
	}
	for _, s := range c.perThread {
		out = append(out, s)
	}
	return out
}

// order makes work queued next on s wait as CUDA's legacy default stream
// rule says: on the legacy stream, for the work queued so far on every
// blocking stream; on a blocking stream, for the work queued so far on the
// legacy stream. Non-blocking streams wait for nothing.
func (c *context) order(s *stream) error {
	switch {
	case s.legacy:
		for _, b := range c.blockingStreams() {
			if err := c.follow(s.s, b.s); err != nil {
				return err
			}
		}
	case !s.nonBlocking:
		c.mu.Lock()
		legacy := c.legacy
		c.mu.Unlock()
		if legacy != nil {
			return c.follow(s.s, legacy)
		}
	}
	return nil
}

// follow makes later work on waiter wait for the work queued so far on
// leader, through an event, unless leader has none left.
func (c *context) follow(waiter, leader driver.Stream) error {
	if sim.Idle(leader) {
		return nil
	}
	dev := c.active()
	if dev == nil {
		return fmt.Errorf("context destroyed: %w", driver.ErrClosed)
	}
	ev, err := dev.NewEvent()
	if err != nil {
		return err
	}
	defer ev.Close()
	if err := leader.Record(ev); err != nil {
		return err
	}
	return waiter.WaitEvent(ev)
}

// synchronize waits for every stream of the context (cuCtxSynchronize).
func (c *context) synchronize(dev *sim.Device) cuResult {
	if err := dev.Synchronize(); err != nil {
		return c.codeOf(err)
	}
	return success
}

// spoiledFor returns the sticky result for a call that needs no current
// context, such as cuPointerGetAttributes, once a fault ended the process's
// use of the calling thread's current context's device or of the device of
// ctx (the pointer's context, nil for none); success otherwise. cuda.h says
// "any further CUDA work will return the same error"; that a call about a
// pointer counts as CUDA work is a guess, the strict reading.
func spoiledFor(ctx *context) cuResult {
	if c := drv.currentContext(); c != nil {
		if r := c.dev.spoiledResult(); r != success {
			return r
		}
		if dev := c.active(); dev != nil {
			if r := c.faulted(dev); r != success {
				return r
			}
		}
	}
	if ctx != nil {
		if r := ctx.dev.spoiledResult(); r != success {
			return r
		}
		if dev := ctx.active(); dev != nil {
			return ctx.faulted(dev)
		}
	}
	return success
}
