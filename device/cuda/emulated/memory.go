//go:build cuda && cudaemu && linux

package emulated

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// Flags of cuMemHostAlloc and cuMemHostRegister.
const (
	hostAllocPortable      = 0x1
	hostAllocDeviceMap     = 0x2
	hostAllocWriteCombined = 0x4
	hostRegisterPortable   = 0x1
	hostRegisterDeviceMap  = 0x2
	hostRegisterIOMemory   = 0x4
	hostRegisterReadOnly   = 0x8
)

// hostRange is page-locked host memory: from cuMemHostAlloc, or registered.
type hostRange struct {
	base       uintptr
	n          int64
	ctx        *context
	mem        *driver.HostMem
	registered bool
}

func (h *hostRange) contains(p uintptr, n int64) bool {
	return p >= h.base && n >= 0 && uint64(p-h.base)+uint64(n) <= uint64(h.n)
}

// hostAt returns the page-locked range that holds [p, p+n), or nil.
func hostAt(p uintptr, n int64) *hostRange {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	for _, h := range drv.host {
		if h.contains(p, max(n, 1)) {
			return h
		}
	}
	return nil
}

// hostOverlapping returns a page-locked range that shares a byte with
// [p, p+n), or nil. The driver registers bytes, not pages: on the H100
// (driver 580.159.04, 2026-11-27, conformance TestHostMemory) a second
// registration that shared a page but no byte with the first succeeded.
// That one that shares bytes is refused (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
// is what cuMemHostRegister's page implies; no GPU has answered it yet.
func hostOverlapping(p uintptr, n int64) *hostRange {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	for _, h := range drv.host {
		if p < h.base+uintptr(h.n) && h.base < p+uintptr(n) {
			return h
		}
	}
	return nil
}

func addHost(h *hostRange) {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	drv.host = append(drv.host, h)
}

func removeHost(h *hostRange) {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	for i, x := range drv.host {
		if x == h {
			drv.host = append(drv.host[:i], drv.host[i+1:]...)
			return
		}
	}
}

// onDevice reports whether [p, p+n) lies inside one live allocation that
// dev's kernels and copies can reach: its device memory, mapped host
// memory, or memory opened through IPC; or in accessible virtual memory,
// across the mappings it spans.
func onDevice(dev *sim.Device, p uintptr, n int64) bool {
	if dev.InVirtualMemory(devarray.Ptr(p), n) {
		return true
	}
	base, size, ok := dev.Allocation(devarray.Ptr(p))
	if !ok || n < 0 {
		return false
	}
	if h := hostAt(p, n); h != nil && h.mem.Flags&driver.Mapped == 0 {
		return false
	}
	return uint64(p-uintptr(base))+uint64(n) <= uint64(size)
}

func memAlloc(n uint64) (uintptr, cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, r
	}
	if n == 0 {
		return 0, errInvalidValue
	}
	if n > uint64(drv.cfg.memory) {
		return 0, errOutOfMemory
	}
	p, err := dev.Malloc(int64(n))
	if err != nil {
		return 0, c.codeOf(err)
	}
	if r := c.implicitSync(); r != success {
		dev.Free(p)
		return 0, r
	}
	return uintptr(p), success
}

// memFree synchronizes the context, as cuMemFree does, then frees.
func memFree(p uintptr) cuResult {
	c, dev, r := current()
	if r != success {
		return r
	}
	if base, _, ok := dev.Allocation(devarray.Ptr(p)); !ok || uintptr(base) != p || hostAt(p, 1) != nil {
		return errInvalidValue
	}
	if r := c.synchronize(dev); r != success {
		return r
	}
	if r, imported := freeImported(c, p); imported { // mempool_ipc.go
		return r
	}
	return c.codeOf(dev.Free(devarray.Ptr(p)))
}

func memGetInfo() (free, total int64, r cuResult) {
	c, dev, r := current()
	if r != success {
		return 0, 0, r
	}
	free, total, err := dev.MemInfo()
	return free, total, c.codeOf(err)
}

func memHostAlloc(n uint64, flags uint32) (unsafe.Pointer, cuResult) {
	c, dev, r := current()
	if r != success {
		return nil, r
	}
	if n == 0 || flags&^(hostAllocPortable|hostAllocDeviceMap|hostAllocWriteCombined) != 0 {
		return nil, errInvalidValue
	}
	if n > 1<<47 { // more than a host's address space
		return nil, errOutOfMemory
	}
	var f driver.HostFlags
	if flags&hostAllocPortable != 0 {
		f |= driver.Portable
	}
	if flags&hostAllocDeviceMap != 0 {
		f |= driver.Mapped
	}
	if flags&hostAllocWriteCombined != 0 {
		f |= driver.WriteCombined
	}
	h, err := dev.HostAlloc(int64(n), f)
	if err != nil {
		return nil, c.codeOf(err)
	}
	if r := c.implicitSync(); r != success {
		dev.HostFree(h)
		return nil, r
	}
	p := unsafe.Pointer(unsafe.SliceData(h.Bytes))
	addHost(&hostRange{base: uintptr(p), n: int64(n), ctx: c, mem: h})
	return p, success
}

// memFreeHost synchronizes the context that allocated p, then frees it.
func memFreeHost(p uintptr) cuResult {
	if _, _, r := current(); r != success {
		return r
	}
	h := hostAt(p, 1)
	if h == nil || h.base != p || h.registered {
		return errInvalidValue
	}
	dev := h.ctx.active()
	if dev == nil {
		return errInvalidValue
	}
	if r := h.ctx.synchronize(dev); r != success {
		return r
	}
	removeHost(h)
	return h.ctx.codeOf(dev.HostFree(h.mem))
}

func memHostGetDevicePointer(p uintptr, flags uint32) (uintptr, cuResult) {
	if _, _, r := current(); r != success {
		return 0, r
	}
	h := hostAt(p, 1)
	if flags != 0 || h == nil {
		return 0, errInvalidValue
	}
	if h.mem.Flags&driver.Mapped == 0 {
		return 0, errInvalidValue
	}
	return uintptr(h.mem.DevPtr) + (p - h.base), success
}

func memHostRegister(p unsafe.Pointer, n uint64, flags uint32) cuResult {
	c, dev, r := current()
	if r != success {
		return r
	}
	if p == nil || n == 0 || n > 1<<62 || flags&^(hostRegisterPortable|hostRegisterDeviceMap|hostRegisterIOMemory|hostRegisterReadOnly) != 0 {
		return errInvalidValue
	}
	if flags&(hostRegisterIOMemory|hostRegisterReadOnly) != 0 {
		return errNotSupported
	}
	if hostOverlapping(uintptr(p), int64(n)) != nil {
		return errHostAlreadyRegistered
	}
	var f driver.HostFlags
	if flags&hostRegisterPortable != 0 {
		f |= driver.Portable
	}
	if flags&hostRegisterDeviceMap != 0 {
		f |= driver.Mapped
	}
	h, err := dev.Register(unsafe.Slice((*byte)(p), n), f)
	if err != nil {
		return c.codeOf(err)
	}
	addHost(&hostRange{base: uintptr(p), n: int64(n), ctx: c, mem: h, registered: true})
	return success
}

// memHostUnregister synchronizes the context that registered p, then
// unregisters it.
func memHostUnregister(p uintptr) cuResult {
	if _, _, r := current(); r != success {
		return r
	}
	h := hostAt(p, 1)
	if h == nil || h.base != p || !h.registered {
		return errHostNotRegistered
	}
	dev := h.ctx.active()
	if dev == nil {
		return errHostNotRegistered
	}
	if r := h.ctx.synchronize(dev); r != success {
		return r
	}
	removeHost(h)
	return h.ctx.codeOf(dev.Unregister(h.mem))
}

// Memory types (CUmemorytype).
const (
	memTypeHost    = 1
	memTypeDevice  = 2
	memTypeArray   = 3
	memTypeUnified = 4
)

// pointerInfo is what cuPointerGetAttributes reports of an address: for one
// the driver does not know, memType 0 and the rest zero.
type pointerInfo struct {
	ctx         *context
	memType     int
	ordinal     int
	start, size uintptr
	devPtr      uintptr
	hostPtr     uintptr
}

// pointerOf finds the allocation that holds address p in any active context.
func pointerOf(p uintptr) pointerInfo {
	if h := hostAt(p, 1); h != nil {
		info := pointerInfo{ctx: h.ctx, memType: memTypeHost, ordinal: h.ctx.dev.ordinal, start: h.base, size: uintptr(h.n), hostPtr: p}
		if h.mem.Flags&driver.Mapped != 0 {
			info.devPtr = uintptr(h.mem.DevPtr) + (p - h.base)
		}
		return info
	}
	drv.mu.Lock()
	devices := append([]*device(nil), drv.devices...)
	drv.mu.Unlock()
	for _, d := range devices {
		for _, c := range append([]*context{d.primary}, madeContexts(d)...) {
			dev := c.active()
			if dev == nil {
				continue
			}
			if base, size, ok := dev.Allocation(devarray.Ptr(p)); ok {
				// The range is what cuMemAlloc was asked for, without the
				// padding to the next 256 bytes: gorgonia.org/cu's
				// TestDevicePtr_AddressRange expects cuMemGetAddressRange
				// to give an allocation of 12345 bytes as 12345 bytes.
				if n, ok := dev.Requested(base); ok {
					size = n
				}
				if p-uintptr(base) >= uintptr(size) {
					continue
				}
				return pointerInfo{ctx: c, memType: memTypeDevice, ordinal: d.ordinal, start: uintptr(base), size: uintptr(size), devPtr: p}
			}
		}
	}
	return pointerInfo{}
}
