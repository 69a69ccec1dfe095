//go:build cuda && cudaemu && linux

package emulated

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// maxCopy bounds a copy's size, so no sum of sizes overflows.
const maxCopy = 1 << 62

// hostBytes is host memory at p as a slice.
func hostBytes(p unsafe.Pointer, n int64) []byte { return unsafe.Slice((*byte)(p), n) }

// cPointer is the C address p as a pointer: memory outside the Go heap
// that a caller passed as an integer (a CUdeviceptr that is a host address).
func cPointer(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// staged returns a copy of pageable host memory: what the driver stages a
// copy from pageable memory through before it returns.
func staged(b []byte) []byte { return append([]byte(nil), b...) }

// copyHtoD copies n bytes of host memory at src to device memory at dst on
// stream sh. From page-locked memory: synchronous (cuMemcpyHtoD, on the
// legacy stream) it returns when the copy is done, Async when it is
// queued. From pageable memory both first wait for the stream, then stage
// the source and return with the device write pending (pageable.go).
func copyHtoD(dst uintptr, src unsafe.Pointer, n uint64, sh uintptr, async bool) cuResult {
	_, dev, s, r := currentStream(sh)
	if r != success {
		return r
	}
	if n == 0 {
		return success
	}
	if src == nil || n > maxCopy || !onDevice(dev, dst, int64(n)) {
		return errInvalidValue
	}
	pinned, r := hostSide(uintptr(src), int64(n))
	if r != success {
		return r
	}
	b := hostBytes(src, int64(n))
	if !pinned {
		if r := s.syncForPageable(); r != success {
			return r
		}
		b = staged(b)
	}
	if r := s.run(func(st driver.Stream) error { return st.CopyHtoDAsync(devarray.Ptr(dst), b) }); r != success {
		return r
	}
	if async || !pinned {
		return success
	}
	return s.wait()
}

// copyDtoH copies n bytes of device memory at src to host memory at dst.
// Synchronous (cuMemcpyDtoH) it returns with the bytes there; Async into
// page-locked memory when the copy is queued, into pageable memory when
// it is complete (pageable.go).
func copyDtoH(dst unsafe.Pointer, src uintptr, n uint64, sh uintptr, async bool) cuResult {
	_, dev, s, r := currentStream(sh)
	if r != success {
		return r
	}
	if n == 0 {
		return success
	}
	if dst == nil || n > maxCopy || !onDevice(dev, src, int64(n)) {
		return errInvalidValue
	}
	pinned, r := hostSide(uintptr(dst), int64(n))
	if r != success {
		return r
	}
	if !pinned {
		s.ctx.waitHostFuncs()
		if async && !drv.cfg.pageableWaits {
			return s.copyToPageable(dst, src, n)
		}
	}
	b := hostBytes(dst, int64(n))
	if r := s.run(func(st driver.Stream) error { return st.CopyDtoHAsync(b, devarray.Ptr(src)) }); r != success {
		return r
	}
	if async && pinned {
		return success
	}
	return s.wait()
}

// copyDtoD copies n bytes within the device: queued, synchronous or not
// (cuMemcpyDtoD returns before the copy is done).
func copyDtoD(dst, src uintptr, n uint64, sh uintptr) cuResult {
	_, dev, s, r := currentStream(sh)
	if r != success {
		return r
	}
	if n == 0 {
		return success
	}
	if n > maxCopy || !onDevice(dev, dst, int64(n)) || !onDevice(dev, src, int64(n)) {
		return errInvalidValue
	}
	return s.run(func(st driver.Stream) error { return st.CopyDtoDAsync(devarray.Ptr(dst), devarray.Ptr(src), int64(n)) })
}

// copyPeer copies n bytes from src in context sc to dst in context dc
// (cuMemcpyPeer). It returns at once, and the copy is "serialized with
// respect to all pending and future asynchronous work in to the current
// context, srcContext, and dstContext (use cuMemcpyPeerAsync to avoid this
// synchronization)" (cuMemcpyPeer): it waits for the work queued so far on
// every stream of the three contexts, non-blocking ones too, and the work
// queued later on each of those streams waits for it. Within one context
// it is cuMemcpyDtoD on the legacy stream: on the H100 (driver 580.159.04,
// 2026-11-27, conformance "cuMemcpyPeer is asynchronous") a copy on a
// non-blocking stream queued after a cuMemcpyPeer within one device
// completed while the legacy stream before it was held. That a stream made
// after the call need not wait is a guess.
func copyPeer(dst, dc, src, sc uintptr, n uint64) cuResult {
	cur, _, r := current()
	if r != success {
		return r
	}
	e, r := checkPeer(dst, dc, src, sc, n, nil)
	if r != success || n == 0 {
		return r
	}
	dctx, sctx, ddev, sdev := e.dctx, e.sctx, e.ddev, e.sdev
	ds, r := dctx.stream(0)
	if r != success {
		return r
	}
	if sctx == dctx {
		return ds.run(func(st driver.Stream) error { return st.CopyDtoDAsync(devarray.Ptr(dst), devarray.Ptr(src), int64(n)) })
	}
	var others []*stream
	seen := make(map[*context]bool)
	for _, c := range []*context{cur, sctx, dctx} {
		if !seen[c] {
			seen[c] = true
			others = append(others, c.everyStream()...)
		}
	}
	for _, o := range others {
		if o.s != ds.s {
			if r := waitAcross(ds, o); r != success {
				return r
			}
		}
	}
	r = ds.run(func(st driver.Stream) error {
		return sim.CopyPeerAsync(st, devarray.Ptr(dst), ddev, devarray.Ptr(src), sdev, int64(n))
	})
	if r != success {
		return r
	}
	for _, o := range others {
		if o.s != ds.s {
			if r := waitAcross(o, ds); r != success {
				return r
			}
		}
	}
	return success
}

// everyStream returns every stream of the context: the legacy default
// stream, those made by cuStreamCreate and the per-thread ones.
func (c *context) everyStream() []*stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.legacy == nil {
		return nil
	}
	out := []*stream{{ctx: c, s: c.legacy, legacy: true}}
	for s := range c.streams {
		out = append(out, s)
	}
	for _, s := range c.perThread {
		out = append(out, s)
	}
	return out
}

// waitAcross makes later work on waiter wait for the work queued so far on
// leader, which may be of another context, through an event of leader's,
// unless leader has none left.
func waitAcross(waiter, leader *stream) cuResult {
	if sim.Idle(leader.s) {
		return success
	}
	dev := leader.ctx.active()
	if dev == nil {
		return leader.ctx.destroyedResult()
	}
	ev, err := dev.NewEvent()
	if err != nil {
		return leader.ctx.codeOf(err)
	}
	defer ev.Close()
	if err := leader.s.Record(ev); err != nil {
		return leader.ctx.codeOf(err)
	}
	if err := waiter.s.WaitEvent(ev); err != nil {
		return waiter.ctx.codeOf(err)
	}
	return success
}

// copyPeerAsync is cuMemcpyPeerAsync: the copy from src in context sc to
// dst in context dc is queued on stream sh of the current context, which
// must be one of the two, and orders with that stream's work only: the
// function "is asynchronous with respect to the host and all work on other
// streams and other devices" (cuMemcpyPeerAsync).
func copyPeerAsync(dst, dc, src, sc uintptr, n uint64, sh uintptr) cuResult {
	c, _, s, r := currentStream(sh)
	if r != success {
		return r
	}
	e, r := checkPeer(dst, dc, src, sc, n, c)
	if r != success || n == 0 {
		return r
	}
	return s.run(func(st driver.Stream) error {
		if e.sctx == e.dctx {
			return st.CopyDtoDAsync(devarray.Ptr(dst), devarray.Ptr(src), int64(n))
		}
		return sim.CopyPeerAsync(st, devarray.Ptr(dst), e.ddev, devarray.Ptr(src), e.sdev, int64(n))
	})
}

// peerEnds are a peer copy's two contexts and their devices.
type peerEnds struct {
	dctx, sctx *context
	ddev, sdev *sim.Device
}

// checkPeer checks a peer copy of n bytes from src in context sc to dst in
// context dc: both contexts exist and are active (and one of them is via,
// where via is not nil), neither has faulted, and, unless n is 0, both
// ranges lie in allocations of their devices.
func checkPeer(dst, dc, src, sc uintptr, n uint64, via *context) (peerEnds, cuResult) {
	dctx, ok1 := lookup[*context](dc)
	sctx, ok2 := lookup[*context](sc)
	if !ok1 || !ok2 || (via != nil && via != dctx && via != sctx) {
		return peerEnds{}, errInvalidContext
	}
	e := peerEnds{dctx: dctx, sctx: sctx, ddev: dctx.active(), sdev: sctx.active()}
	if e.ddev == nil || e.sdev == nil {
		return peerEnds{}, errInvalidContext
	}
	if r := sctx.faulted(e.sdev); r != success {
		return peerEnds{}, r
	}
	if r := dctx.faulted(e.ddev); r != success {
		return peerEnds{}, r
	}
	if n > 0 && (n > maxCopy || !onDevice(e.ddev, dst, int64(n)) || !onDevice(e.sdev, src, int64(n))) {
		return peerEnds{}, errInvalidValue
	}
	return e, success
}
