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
// (cuMemcpyPeer): it returns at once, and the copy is ordered after the
// work queued so far on both contexts' legacy streams and before the work
// queued on them later.
func copyPeer(dst, dc, src, sc uintptr, n uint64) cuResult {
	if _, _, r := current(); r != success {
		return r
	}
	dctx, ok1 := lookup[*context](dc)
	sctx, ok2 := lookup[*context](sc)
	if !ok1 || !ok2 {
		return errInvalidContext
	}
	ddev, sdev := dctx.active(), sctx.active()
	if ddev == nil || sdev == nil {
		return errInvalidContext
	}
	if r := sctx.faulted(sdev); r != success {
		return r
	}
	if r := dctx.faulted(ddev); r != success {
		return r
	}
	if n == 0 {
		return success
	}
	if n > maxCopy || !onDevice(ddev, dst, int64(n)) || !onDevice(sdev, src, int64(n)) {
		return errInvalidValue
	}
	ss, r := sctx.stream(0)
	if r != success {
		return r
	}
	ds, r := dctx.stream(0)
	if r != success {
		return r
	}
	if sctx == dctx {
		return ds.run(func(st driver.Stream) error { return st.CopyDtoDAsync(devarray.Ptr(dst), devarray.Ptr(src), int64(n)) })
	}
	// The source's legacy stream records how far it is and then holds
	// until the copy has read the source; the copy runs on the
	// destination's legacy stream once the source is that far.
	ready, err := sdev.NewEvent()
	if err != nil {
		return sctx.codeOf(err)
	}
	var resume func()
	if r := ss.run(func(st driver.Stream) error {
		if err := st.Record(ready); err != nil {
			return err
		}
		var err error
		resume, err = sim.Pause(st)
		return err
	}); r != success {
		ready.Close()
		return r
	}
	r = ds.run(func(st driver.Stream) error {
		err := ddev.Launch(st, []driver.Range{{Ptr: devarray.Ptr(dst), N: int64(n)}}, func(mem [][]byte) error {
			if err := ready.Synchronize(); err != nil {
				return err
			}
			b, err := sdev.Peek(devarray.Ptr(src), int64(n))
			if err != nil {
				return err
			}
			copy(mem[0], b)
			return nil
		})
		if err != nil {
			return err
		}
		return sim.HostFunc(st, func() { resume(); ready.Close() })
	})
	if r != success {
		resume()
		ready.Close()
	}
	return r
}
