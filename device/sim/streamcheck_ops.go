package sim

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// streamcheck_ops.go: what each kind of operation touches, for the stream
// race checker, and the per-thread default stream's handle.

// hostSide adds host memory b, read or written by an async copy, to o: a
// page-locked range the device touches when the copy runs; pageable
// memory is the host's own (CUDA synchronizes the stream before staging a
// copy from it, and a copy to it returns when done), so it is not tracked.
func (d *Device) hostSide(o *opSpec, b []byte, write bool) {
	if len(b) == 0 {
		return
	}
	if d.tracked(b) {
		a := bytesOf(b)
		a.write = write
		o.accesses = append(o.accesses, a)
		return
	}
	if write {
		o.hostWaitsAfter = true
	} else {
		o.hostWaitsBefore = true
	}
}

// as3D returns a 2-D copy as the 3-D copy of one slice.
func as3D(p devarray.Memcpy2D) devarray.Memcpy3D {
	return devarray.Memcpy3D{Dst: p.Dst, Src: p.Src, DstPitch: p.DstPitch, SrcPitch: p.SrcPitch,
		DstHeight: p.Height, SrcHeight: p.Height, Width: p.Width, Height: p.Height, Depth: 1}
}

// pitchedOp returns the operation of a 2-D or 3-D copy: each row it reads
// and writes, rows that touch merged into one range. A copy whose
// arguments are invalid touches nothing (it fails when it runs).
func (d *Device) pitchedOp(kind string, p devarray.Memcpy3D) opSpec {
	o := opSpec{kind: kind}
	if p.Width <= 0 || p.Height <= 0 || p.Depth <= 0 || p.SrcPitch < p.Width || p.DstPitch < p.Width ||
		p.SrcHeight < p.Height || p.DstHeight < p.Height {
		return o
	}
	for _, side := range []struct {
		pl            devarray.Place
		pitch, height int64
		write         bool
	}{{p.Src, p.SrcPitch, p.SrcHeight, false}, {p.Dst, p.DstPitch, p.DstHeight, true}} {
		var base uintptr
		if side.pl.OnHost() {
			span := (p.Depth-1)*side.pitch*side.height + (p.Height-1)*side.pitch + p.Width
			if span > int64(len(side.pl.Host)) {
				continue // fails when it runs
			}
			if !d.tracked(side.pl.Host[:span]) {
				if side.write {
					o.hostWaitsAfter = true
				} else {
					o.hostWaitsBefore = true
				}
				continue
			}
			base = uintptr(unsafe.Pointer(unsafe.SliceData(side.pl.Host)))
		} else {
			base = uintptr(side.pl.Dev)
		}
		o.accesses = append(o.accesses, rows(base, side.pitch, side.height, p, side.write)...)
	}
	return o
}

// rows returns the ranges of one side of a pitched copy.
func rows(base uintptr, pitch, height int64, p devarray.Memcpy3D, write bool) []access {
	if pitch == p.Width && (height == p.Height || p.Depth == 1) { // one block of bytes
		n := (p.Depth-1)*pitch*height + p.Height*p.Width
		return []access{{lo: base, hi: base + uintptr(n), write: write}}
	}
	out := make([]access, 0, p.Depth*(p.Height))
	for z := int64(0); z < p.Depth; z++ {
		slice := base + uintptr(z*pitch*height)
		if pitch == p.Width {
			out = append(out, access{lo: slice, hi: slice + uintptr(p.Height*p.Width), write: write})
			continue
		}
		for y := int64(0); y < p.Height; y++ {
			lo := slice + uintptr(y*pitch)
			out = append(out, access{lo: lo, hi: lo + uintptr(p.Width), write: write})
		}
	}
	return out
}

// perThreadStream is handle 2, CU_STREAM_PER_THREAD, with the stream race
// checker on: its work runs on sim's default stream, and the checker
// judges it as work of the calling OS thread's own per-thread stream.
type perThreadStream struct{ *stream }

func (p perThreadStream) CopyHtoDAsync(dst devarray.Ptr, src []byte) error {
	return p.copyHtoD(true, dst, src)
}
func (p perThreadStream) CopyDtoHAsync(dst []byte, src devarray.Ptr) error {
	return p.copyDtoH(true, dst, src)
}
func (p perThreadStream) CopyDtoDAsync(dst, src devarray.Ptr, n int64) error {
	return p.copyDtoD(true, dst, src, n)
}
func (p perThreadStream) Memcpy2DAsync(c devarray.Memcpy2D) error { return p.memcpy2D(true, c) }
func (p perThreadStream) Memcpy3DAsync(c devarray.Memcpy3D) error { return p.memcpy3D(true, c) }
func (p perThreadStream) MemsetAsync(dst devarray.Ptr, value byte, n int64) error {
	return p.memset(true, dst, value, n)
}
func (p perThreadStream) MallocAsync(nbytes int64) (devarray.Ptr, error) {
	return p.mallocDefault(true, nbytes)
}
func (p perThreadStream) MallocFromPoolAsync(nbytes int64, mp driver.MemPool) (devarray.Ptr, error) {
	return p.mallocFromPoolAsync(true, nbytes, mp)
}
func (p perThreadStream) FreeAsync(ptr devarray.Ptr) error { return p.freeAsync(true, ptr) }
func (p perThreadStream) Record(e driver.Event) error      { return p.record(true, e) }
func (p perThreadStream) WaitEvent(e driver.Event) error   { return p.waitEvent(true, e) }
func (p perThreadStream) Synchronize() error               { return p.synchronize(true) }
func (p perThreadStream) Handle() uintptr                  { return driver.PerThreadDefaultStream }

// Close releases only the wrapper.
func (perThreadStream) Close() error { return nil }

// syncHostSide adds host memory b of a synchronous copy to accesses when
// it is page-locked (an async copy may still use it); the host waits for
// a synchronous call, so pageable memory needs nothing.
func (d *Device) syncHostSide(accesses []access, b []byte, write bool) []access {
	if d.check == nil || len(b) == 0 || !d.tracked(b) {
		return accesses
	}
	a := bytesOf(b)
	a.write = write
	return append(accesses, a)
}

// syncPitched returns the accesses of a synchronous 2-D or 3-D copy.
func (d *Device) syncPitched(kind string, p devarray.Memcpy3D) []access {
	if d.check == nil {
		return nil
	}
	return d.pitchedOp(kind, p).accesses
}

// checkFree judges the free of the allocation at p as cuMemFree's: legacy
// work that writes the whole allocation, which the host waits for; its
// history is forgotten after. A pointer that is not an allocation's start
// is left to Free's own error.
func (d *Device) checkFree(p devarray.Ptr) error {
	if d.check == nil {
		return nil
	}
	d.mu.RLock()
	var sp span
	ok := !d.closed && uintptr(p) >= d.base && uintptr(p) < d.base+uintptr(d.arena.size)
	if ok {
		off := int64(uintptr(p) - d.base)
		sp, ok = d.arena.find(off, 0)
		ok = ok && sp.off == off
	}
	d.mu.RUnlock()
	if !ok {
		return nil
	}
	return d.check.check(opSpec{kind: "free", l: d.check.legacy, accesses: []access{devBytes(p, sp.size, true)},
		hostWaitsAfter: true, forget: true})
}

// checkHostFree judges the release of page-locked memory h as a free.
func (d *Device) checkHostFree(kind string, h *driver.HostMem) error {
	if d.check == nil || h == nil || len(h.Bytes) == 0 {
		return nil
	}
	a := bytesOf(h.Bytes)
	a.write = true
	return d.check.check(opSpec{kind: kind, l: d.check.legacy, accesses: []access{a}, hostWaitsAfter: true, forget: true})
}

// HostWrite tells the stream race checker of dev (a sim device with
// check=streams; otherwise it does nothing) that the host writes b now,
// outside any device call: to page-locked or mapped memory that a copy or
// kernel queued earlier may still use. It returns a *StreamRaceError if
// nothing orders that use before the write. Go code that fills a staging
// buffer or a mapped array calls it as the race detector's annotations
// are called.
func HostWrite(dev driver.Device, b []byte) error { return hostAccess(dev, b, true) }

// HostRead is HostWrite for a read by the host.
func HostRead(dev driver.Device, b []byte) error { return hostAccess(dev, b, false) }

func hostAccess(dev driver.Device, b []byte, write bool) error {
	d, ok := dev.(*Device)
	if !ok || d.check == nil || len(b) == 0 {
		return nil
	}
	a := bytesOf(b)
	a.write = write
	kind := "host read"
	if write {
		kind = "host write"
	}
	return d.check.check(opSpec{kind: kind, l: d.check.host, accesses: []access{a}})
}
