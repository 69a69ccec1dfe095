//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

func alignUp(n int64) int64 { return (n + Alignment - 1) / Alignment * Alignment }

func ptrOf(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// Malloc allocates nbytes of device memory (cuMemAlloc). The ledger counts
// the size rounded up to 256 bytes; a request of 0 bytes still gets a
// distinct, valid pointer. A device that is full and a ledger limit give the
// same error, *accounting.OutOfMemoryError.
func (d *Device) Malloc(nbytes int64) (devarray.Ptr, error) {
	if nbytes < 0 {
		return 0, fmt.Errorf("cuda: malloc %d bytes: %w", nbytes, driver.ErrInvalidValue)
	}
	return d.malloc("malloc", nbytes, accounting.Device, func(size int64) (uintptr, error) {
		p, e := cu.MemAlloc(size)
		return uintptr(p), fromCu(e)
	})
}

// malloc allocates nbytes, rounded up to 256, with alloc (called with the
// context current), counted under kind.
func (d *Device) malloc(op string, nbytes int64, kind accounting.Kind, alloc func(size int64) (uintptr, error)) (devarray.Ptr, error) {
	if err := d.closedErr(op); err != nil {
		return 0, err
	}
	size := alignUp(max(nbytes, 1))
	if err := d.ledger.Reserve(kind, size); err != nil {
		return 0, fmt.Errorf("cuda: %s: %w", op, err)
	}
	var p uintptr
	err := d.call(func() error {
		var e error
		p, e = alloc(size)
		return e
	})
	if err != nil {
		d.ledger.Cancel(kind, size)
		if errors.Is(err, driver.ErrOutOfMemory) {
			return 0, fmt.Errorf("cuda: %s: %w", op, d.ledger.OutOfMemory(kind, size, d.ledger.Current(kind), false))
		}
		return 0, fmt.Errorf("cuda: %s %d bytes: %w", op, nbytes, err)
	}
	if !d.keepLive(func() { d.putBack(devarray.Ptr(p), size, nbytes, kind) }) {
		// Close ran meanwhile and took the live allocations without this one: free it, as Close would have.
		d.ledger.Cancel(kind, size)
		d.callAlways(func() error { return fromCu(cu.MemFree(cu.DevicePtr(p))) })
		return 0, fmt.Errorf("cuda: %s: %w", op, driver.ErrClosed)
	}
	d.ledger.Commit(kind, p, size)
	return devarray.Ptr(p), nil
}

// Free frees memory returned by Malloc or MallocManaged. A pointer that is not the start of
// a live allocation of this device is an error wrapping
// driver.ErrInvalidPointer, and is not passed to the driver.
func (d *Device) Free(p devarray.Ptr) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("cuda: free %v: %w", p, driver.ErrClosed)
	}
	size, ok := d.allocs[p]
	kind, asked := d.kindOf(p), d.managed[p]
	delete(d.allocs, p)
	delete(d.managed, p)
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("cuda: free %v: not the start of a live allocation: %w", p, driver.ErrInvalidPointer)
	}
	if err := d.call(func() error { return fromCu(cu.MemFree(cu.DevicePtr(p))) }); err != nil {
		if d.keepLive(func() { d.putBack(p, size, asked, kind) }) {
			return fmt.Errorf("cuda: free %v: %w", p, err)
		}
		// Close took the live allocations while the free ran: count it freed, as Close would have.
		d.ledger.Free(kind, uintptr(p), size)
		return fmt.Errorf("cuda: free %v: %w", p, err)
	}
	d.ledger.Free(kind, uintptr(p), size)
	return nil
}

// keepLive puts back, with put, an allocation whose free failed, unless
// the device was closed meanwhile (then it returns false): a free that
// fails gives nothing back, so the allocation stays live, in the ledger
// too (accounting's rule for a failed free), until a later free succeeds
// or Close releases it. After a sticky error every call fails: "This
// leaves the process in an inconsistent state and any further CUDA work
// will return the same error" (cuda.h, CUDA_ERROR_ILLEGAL_ADDRESS), and
// the memory is the context's until Close destroys it. That a free which
// fails frees nothing is a guess where the error is not sticky: cuMemFree
// "may also return error codes from previous, asynchronous launches".
func (d *Device) keepLive(put func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	put()
	return true
}

// Memset sets nbytes at dst to value (cuMemsetD8) and returns when they
// are set: the driver only queues a memset of device memory, so the
// backend waits for it.
func (d *Device) Memset(dst devarray.Ptr, value byte, nbytes int64) error {
	if nbytes < 0 {
		return fmt.Errorf("cuda: memset %d bytes: %w", nbytes, driver.ErrInvalidValue)
	}
	start := time.Now()
	err := d.call(func() error {
		if err := fromCu(cu.MemsetD8(cu.DevicePtr(dst), value, nbytes)); err != nil {
			return err
		}
		return settle()
	})
	if err != nil {
		return fmt.Errorf("cuda: memset %v: %w", dst, d.outside(err, driver.Range{Ptr: dst, N: nbytes}))
	}
	d.ledger.RecordMemset(nbytes, time.Since(start))
	return nil
}

// hostAllocFlags converts cuarray's host flags to cuMemHostAlloc's.
func hostAllocFlags(f driver.HostFlags) uint32 {
	var c uint32
	if f&driver.Portable != 0 {
		c |= hostAllocPortable
	}
	if f&driver.Mapped != 0 {
		c |= hostAllocDeviceMap
	}
	if f&driver.WriteCombined != 0 {
		c |= hostAllocWriteCombined
	}
	return c
}

// HostAlloc allocates n bytes of page-locked host memory (cuMemHostAlloc).
// A Mapped request on a context without CU_CTX_MAP_HOST fails with
// driver.ErrNotMapped, naming the flag; it never falls back to unmapped memory.
func (d *Device) HostAlloc(n int64, flags driver.HostFlags) (*driver.HostMem, error) {
	if n <= 0 || flags&^driver.AllocFlags != 0 {
		return nil, fmt.Errorf("cuda: host alloc %d bytes, flags %v: want a positive size and known flags: %w", n, flags, driver.ErrInvalidValue)
	}
	if flags&driver.Mapped != 0 && !d.info.CanMapHost {
		return nil, fmt.Errorf("cuda: host alloc with flag Mapped: context flags %q: %w", d.info.ContextFlags, driver.ErrNotMapped)
	}
	if err := d.closedErr("host alloc"); err != nil {
		return nil, err
	}
	kind := flags.LedgerKind()
	if err := d.ledger.Reserve(kind, n); err != nil {
		return nil, fmt.Errorf("cuda: host alloc: %w", err)
	}
	h := &driver.HostMem{Flags: flags}
	err := d.call(func() error {
		p, c := memHostAlloc(n, hostAllocFlags(flags))
		if err := check(c); err != nil {
			return err
		}
		h.Bytes = unsafe.Slice((*byte)(p), n)
		if flags&driver.Mapped != 0 {
			dp, c := memHostGetDevicePointer(p)
			if err := check(c); err != nil {
				memFreeHost(p)
				return fmt.Errorf("device pointer of mapped memory: %w", err)
			}
			h.DevPtr = devarray.Ptr(dp)
		}
		return nil
	})
	if err != nil {
		d.ledger.Cancel(kind, n)
		if errors.Is(err, driver.ErrOutOfMemory) {
			return nil, fmt.Errorf("cuda: host alloc: %w", d.ledger.OutOfMemory(kind, n, d.ledger.Current(kind), false))
		}
		return nil, fmt.Errorf("cuda: host alloc %d bytes, flags %v: %w", n, flags, err)
	}
	addr := uintptr(ptrOf(h.Bytes))
	d.mu.Lock()
	d.host.Insert(driver.HostRange{Addr: addr, Mem: h.Bytes, Flags: flags})
	d.mu.Unlock()
	d.ledger.Commit(kind, addr, n)
	return h, nil
}

// HostFree frees memory from HostAlloc and clears h. Memory this device did
// not allocate, or a second free, is an error wrapping driver.ErrInvalidPointer.
func (d *Device) HostFree(h *driver.HostMem) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("cuda: host free: %w", driver.ErrClosed)
	}
	a, err := d.host.Take(h, false)
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cuda: host free: %w", err)
	}
	if err := d.call(func() error { return check(memFreeHost(ptrOf(a.Mem))) }); err != nil {
		if !d.keepLive(func() { d.host.Insert(a) }) { // live until a later free or Close (keepLive)
			d.ledger.Free(a.Kind(), a.Addr, int64(len(a.Mem)))
		}
		return fmt.Errorf("cuda: host free: %w", err)
	}
	d.ledger.Free(a.Kind(), a.Addr, int64(len(a.Mem)))
	h.Bytes, h.DevPtr = nil, 0
	return nil
}

// Register page-locks b (cuMemHostRegister), with Portable and Mapped as
// the only flags that apply. b must not be Go heap memory — the driver
// keeps its address — so it must come from mmap or C; this package cannot
// tell, and package pinned checks before calling. The ledger counts the
// bytes as Registered. Undo with Unregister.
func (d *Device) Register(b []byte, flags driver.HostFlags) (*driver.HostMem, error) {
	if len(b) == 0 || flags&^(driver.Portable|driver.Mapped) != 0 {
		return nil, fmt.Errorf("cuda: register %d bytes, flags %v: want memory and only Portable or Mapped: %w", len(b), flags, driver.ErrInvalidValue)
	}
	if flags&driver.Mapped != 0 && !d.info.CanMapHost {
		return nil, fmt.Errorf("cuda: register with flag Mapped: context flags %q: %w", d.info.ContextFlags, driver.ErrNotMapped)
	}
	addr := uintptr(ptrOf(b))
	var c uint32
	if flags&driver.Portable != 0 {
		c |= hostRegisterPortable
	}
	if flags&driver.Mapped != 0 {
		c |= hostRegisterDeviceMap
	}
	if err := d.ledger.Reserve(accounting.Registered, int64(len(b))); err != nil {
		return nil, fmt.Errorf("cuda: register: %w", err)
	}
	d.mu.Lock()
	overlaps := d.host.Overlaps(addr, int64(len(b)))
	d.mu.Unlock()
	if overlaps {
		d.ledger.Cancel(accounting.Registered, int64(len(b))) // a refused registration counts as failed, as on sim
		return nil, fmt.Errorf("cuda: register: bytes [0x%x, +%d) overlap memory that is already page-locked: %w", addr, len(b), driver.ErrAlreadyLocked)
	}
	h := &driver.HostMem{Bytes: b, Flags: flags}
	err := d.call(func() error {
		if err := check(memHostRegister(ptrOf(b), int64(len(b)), c)); err != nil {
			return err
		}
		if flags&driver.Mapped != 0 {
			dp, code := memHostGetDevicePointer(ptrOf(b))
			if err := check(code); err != nil {
				memHostUnregister(ptrOf(b))
				return fmt.Errorf("device pointer of registered memory: %w", err)
			}
			h.DevPtr = devarray.Ptr(dp)
		}
		return nil
	})
	if err != nil {
		d.ledger.Cancel(accounting.Registered, int64(len(b)))
		return nil, fmt.Errorf("cuda: register %d bytes: %w", len(b), err)
	}
	d.mu.Lock()
	d.host.Insert(driver.HostRange{Addr: addr, Mem: b, Flags: flags, Registered: true})
	d.mu.Unlock()
	d.ledger.Commit(accounting.Registered, addr, int64(len(b)))
	return h, nil
}

// Unregister undoes Register (cuMemHostUnregister).
func (d *Device) Unregister(h *driver.HostMem) error {
	d.mu.Lock()
	a, err := d.host.Take(h, true)
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cuda: unregister: %w", err)
	}
	if err := d.call(func() error { return check(memHostUnregister(ptrOf(a.Mem))) }); err != nil {
		if !d.keepLive(func() { d.host.Insert(a) }) { // registered until a later unregister or Close (keepLive)
			d.ledger.Free(accounting.Registered, a.Addr, int64(len(a.Mem)))
		}
		return fmt.Errorf("cuda: unregister: %w", err)
	}
	d.ledger.Free(accounting.Registered, a.Addr, int64(len(a.Mem)))
	h.DevPtr = 0
	return nil
}

// hostPath returns the ledger path for host memory b: pinned when it lies in
// page-locked memory of this device, direct otherwise.
func (d *Device) hostPath(b []byte) accounting.Path {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.host.Path(b)
}

// hostSide returns the ledger path for host memory b of the copy op, or,
// when b is partly page-locked by this device's own page-locked
// allocations and registrations (driver.HostRanges.CheckCopy), a
// *driver.PartlyLockedError, before any driver call: every cuMemcpy
// reference page says such a range "will return CUDA_ERROR_INVALID_VALUE",
// and the error names the ranges the driver's code does not. Memory that
// another library page-locked this device cannot know, and the driver
// still refuses.
func (d *Device) hostSide(op string, b []byte) (accounting.Path, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.host.CheckCopy(op, b); err != nil {
		return 0, err
	}
	return d.host.Path(b), nil
}
