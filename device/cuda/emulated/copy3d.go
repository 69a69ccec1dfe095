//go:build cuda && cudaemu && linux

package emulated

import (
	"math"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// maxPitch is CU_DEVICE_ATTRIBUTE_MAX_PITCH: the largest pitch of device
// memory a pitched copy takes.
const maxPitch = math.MaxInt32

// side is one side of a pitched copy, as CUDA_MEMCPY2D/3D give it.
type side struct {
	memType          int
	host             unsafe.Pointer
	dev              uintptr
	x, y, z          uint64
	pitch, height    uint64
	reserved, hasArr bool
}

// pitched is a decoded CUDA_MEMCPY2D or CUDA_MEMCPY3D.
type pitched struct {
	src, dst             side
	width, height, depth uint64
}

// resolve turns a unified side into a host or device one, by the address.
func (s *side) resolve() {
	if s.memType != memTypeUnified {
		return
	}
	if hostAt(s.dev, 1) != nil {
		s.memType, s.host = memTypeHost, cPointer(s.dev)
		return
	}
	s.memType = memTypeDevice
}

// span returns the bytes the side touches from its start, or false when
// the box does not fit in it or overflows.
func (s side) span(width, height, depth uint64) (uint64, bool) {
	if width > s.pitch || (depth > 1 && height > s.height) || s.pitch > maxCopy || s.height > maxCopy {
		return 0, false
	}
	if s.memType == memTypeDevice && s.pitch > maxPitch && (height > 1 || depth > 1) {
		return 0, false
	}
	slice := s.pitch * max(s.height, height)
	if slice != 0 && (depth > maxCopy/slice || height > maxCopy/max(s.pitch, 1)) {
		return 0, false
	}
	start := s.z*slice + s.y*s.pitch + s.x
	if start > maxCopy {
		return 0, false
	}
	return start + (depth-1)*slice + (height-1)*s.pitch + width, true
}

// place returns the side as a devarray.Place of n bytes from its start.
func (s side) place(dev *sim.Device, n uint64) (devarray.Place, bool) {
	off := s.z*s.pitch*max(s.height, 1) + s.y*s.pitch + s.x
	if s.memType == memTypeHost {
		if s.host == nil {
			return devarray.Place{}, false
		}
		b := hostBytes(s.host, int64(n))
		return devarray.Place{Host: b[off:]}, true
	}
	if !onDevice(dev, s.dev, int64(n)) {
		return devarray.Place{}, false
	}
	return devarray.Place{Dev: devarray.Ptr(s.dev + uintptr(off))}, true
}

// memcpy3D runs a pitched copy on stream sh with the driver's argument
// checks. Synchronous copies follow cuMemcpy's rules: to the host they
// return when done, from page-locked host memory too, from pageable
// memory once the stream is synchronized and the source staged, and
// within the device at once; an Async copy into pageable memory returns
// when done too (pageable.go). A host side partly page-locked is
// CUDA_ERROR_INVALID_VALUE.
func memcpy3D(p pitched, sh uintptr, async bool) cuResult {
	_, dev, s, r := currentStream(sh)
	if r != success {
		return r
	}
	if p.src.reserved || p.dst.reserved {
		return errInvalidValue
	}
	if p.src.hasArr || p.dst.hasArr {
		return errNotSupported
	}
	p.src.resolve()
	p.dst.resolve()
	for _, t := range []int{p.src.memType, p.dst.memType} {
		if t != memTypeHost && t != memTypeDevice {
			return errInvalidValue
		}
	}
	if p.width == 0 || p.height == 0 || p.depth == 0 {
		return success
	}
	ns, ok1 := p.src.span(p.width, p.height, p.depth)
	nd, ok2 := p.dst.span(p.width, p.height, p.depth)
	if !ok1 || !ok2 {
		return errInvalidValue
	}
	src, ok1 := p.src.place(dev, ns)
	dst, ok2 := p.dst.place(dev, nd)
	if !ok1 || !ok2 {
		return errInvalidValue
	}
	var fromPageable, toPageable bool
	if src.OnHost() {
		pinned, r := hostSide(uintptr(p.src.host), int64(ns))
		if r != success {
			return r
		}
		fromPageable = !pinned
	}
	if dst.OnHost() {
		pinned, r := hostSide(uintptr(p.dst.host), int64(nd))
		if r != success {
			return r
		}
		toPageable = !pinned
	}
	if fromPageable && !dst.OnHost() {
		if r := s.syncForPageable(); r != success {
			return r
		}
		src.Host = staged(src.Host)
	}
	if toPageable {
		s.ctx.waitHostFuncs()
	}
	m := devarray.Memcpy3D{
		Dst: dst, Src: src,
		DstPitch: int64(p.dst.pitch), SrcPitch: int64(p.src.pitch),
		DstHeight: int64(max(p.dst.height, p.height)), SrcHeight: int64(max(p.src.height, p.height)),
		Width: int64(p.width), Height: int64(p.height), Depth: int64(p.depth),
	}
	if r := s.run(func(st driver.Stream) error { return st.Memcpy3DAsync(m) }); r != success {
		return r
	}
	if toPageable && drv.cfg.pageableWaits {
		return s.wait() // "returns only once the copy has completed", Async too
	}
	if async || (!dst.OnHost() && (fromPageable || !src.OnHost())) {
		return success
	}
	return s.wait()
}
