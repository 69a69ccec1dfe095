package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

func alignUp(n int64) int64 { return (n + Alignment - 1) / Alignment * Alignment }

// Malloc allocates nbytes of device memory, 256-byte aligned. The ledger
// counts the aligned size, which is what the device gives up. A request of 0
// bytes still gets a distinct, valid pointer.
func (d *Device) Malloc(nbytes int64) (devarray.Ptr, error) {
	return d.malloc(nbytes, accounting.Device)
}

// malloc allocates nbytes of the device's memory, counted under kind.
func (d *Device) malloc(nbytes int64, kind accounting.Kind) (devarray.Ptr, error) {
	if nbytes < 0 {
		return 0, fmt.Errorf("sim: malloc %d bytes: %w", nbytes, driver.ErrInvalidValue)
	}
	if err := d.checkFault("malloc"); err != nil {
		return 0, err
	}
	if nbytes > d.cfg.Memory {
		d.ledger.RecordFailure(kind, nbytes)
		return 0, fmt.Errorf("sim: malloc: %w", d.ledger.OutOfMemory(kind, nbytes, d.ledger.Current(kind), false))
	}
	size := alignUp(max(nbytes, 1))
	if err := d.ledger.Reserve(kind, size); err != nil {
		return 0, fmt.Errorf("sim: malloc: %w", err)
	}
	if injected(&d.allocCountdown) {
		d.ledger.Cancel(kind, size)
		oom := d.ledger.OutOfMemory(kind, size, d.ledger.Current(kind), false)
		return 0, fmt.Errorf("sim: malloc %d bytes: %w: %w", nbytes, driver.ErrInjected, oom)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.ledger.Cancel(kind, size)
		return 0, fmt.Errorf("sim: malloc: %w", driver.ErrClosed)
	}
	off, ok := d.arena.alloc(size)
	var free, largest int64
	if ok {
		d.requested[off] = nbytes
	} else {
		free, largest = d.arena.size-d.arena.used, d.arena.largestFree()
	}
	d.mu.Unlock()
	if !ok {
		d.ledger.Cancel(kind, size)
		// The arena's figures when the allocation failed: its free bytes
		// may be more than size, in blocks that are each smaller.
		oom := d.ledger.OutOfMemory(kind, size, d.ledger.Current(kind), false)
		oom.DeviceFree, oom.DeviceTotal, oom.DeviceLargestFree = free, d.arena.size, largest
		return 0, fmt.Errorf("sim: malloc: %w", oom)
	}
	p := d.base + uintptr(off)
	d.ledger.Commit(kind, p, size)
	return devarray.Ptr(p), nil
}

// Free frees memory returned by Malloc or MallocManaged. Any other pointer, or a pointer
// already freed, is an error wrapping driver.ErrInvalidPointer.
//
// Like cuMemFree, it first waits for the work queued on the default
// stream (work queued on other streams is not waited for: free only what
// they are done with).
func (d *Device) Free(p devarray.Ptr) error {
	if err := d.checkFault(fmt.Sprintf("free %v", p)); err != nil {
		return err // as cuMemFree after a sticky error: the memory stays until Close
	}
	if d.isStreamOrdered(p) {
		return fmt.Errorf("sim: free %v: a stream-ordered allocation (free it with a stream's FreeAsync): %w", p, driver.ErrInvalidPointer)
	}
	if err := d.checkFree(p); err != nil {
		return err
	}
	if err := d.legacy.drain(); err != nil && !errors.Is(err, driver.ErrClosed) {
		return fmt.Errorf("sim: free %v: %w", p, err)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("sim: free %v: %w", p, driver.ErrClosed)
	}
	if d.freeMapped(uintptr(p)) {
		d.mu.Unlock()
		return nil
	}
	off := int64(uintptr(p) - d.base)
	var size int64
	ok := uintptr(p) >= d.base && off < d.arena.size
	if ok {
		size, ok = d.arena.release(off)
	}
	if ok {
		delete(d.requested, off)
	}
	if ok && size >= 1<<20 {
		// Give large freed ranges' pages back to the OS, as freed device memory holds nothing.
		punchHole(d.memfd, off, size)
	}
	if ok {
		d.ipc.forget(off) // its IPC handle is stale from now on
	}
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("sim: free %v: not the start of a live allocation: %w", p, driver.ErrInvalidPointer)
	}
	d.ledger.Free(d.forgetManaged(uintptr(p)), uintptr(p), size)
	return nil
}

// devMem returns the bytes [p, p+n) of device memory or of mapped host
// memory, checking that they lie inside one live allocation. The caller
// holds d.mu for reading.
func (d *Device) devMem(p devarray.Ptr, n int64) ([]byte, error) {
	if d.closed {
		return nil, driver.ErrClosed
	}
	addr := uintptr(p)
	if addr >= d.base && addr < d.base+uintptr(d.arena.size) {
		off := int64(addr - d.base)
		if s, ok := d.arena.find(off, n); ok && !d.vmm.isPhysical(s.off) {
			return d.mem[off : off+n : off+n], nil
		}
	} else if start, m, in, err := d.vmm.accessible(addr, n); in {
		if err != nil {
			return nil, err
		}
		off := addr - start
		return m[off : off+uintptr(n) : off+uintptr(n)], nil
	} else if h, ok := d.host.ContainingDevice(addr, n); ok {
		off := int64(addr - h.Device())
		return h.Mem[off : off+n : off+n], nil
	} else if a := d.managed.mappedAt(addr, n); a != nil {
		off := int64(addr - a.base)
		return a.mem[off : off+n : off+n], nil
	} else if m, ok := d.ipc.containing(addr, n); ok {
		return m, nil
	} else if r := d.pageableAt(addr, n); r != nil {
		off := addr - r.addr
		return r.mem[off : off+uintptr(n) : off+uintptr(n)], nil
	}
	return nil, fmt.Errorf("bytes [%v, +%d) are not inside a live allocation%s: %w", p, n, d.hostPointerHint(p), driver.ErrInvalidPointer)
}

// hostPath returns the copy path for host memory b: pinned when it lies in a
// page-locked allocation of this device, direct (pageable) otherwise. The
// caller holds d.mu for reading.
func (d *Device) hostPath(b []byte) accounting.Path { return d.host.Path(b) }

// Memset sets nbytes at dst to value and returns when they are set.
func (d *Device) Memset(dst devarray.Ptr, value byte, nbytes int64) error {
	return d.completeChecked("memset", []access{devBytes(dst, nbytes, true)}, func() error { return d.memset(dst, value, nbytes) })
}

func (d *Device) memset(dst devarray.Ptr, value byte, nbytes int64) error {
	if err := d.deviceWork("memset"); err != nil {
		return err
	}
	if injected(&d.copyCountdown) {
		return fmt.Errorf("sim: memset %v: %w", dst, driver.ErrInjected)
	}
	start := time.Now()
	migrated, err := func() (time.Time, error) {
		d.mu.RLock()
		defer d.mu.RUnlock()
		b, err := d.devMem(dst, nbytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("sim: memset: %w", err)
		}
		if len(b) > 0 {
			b[0] = value
			for filled := 1; filled < len(b); filled *= 2 {
				copy(b[filled:], b[:filled])
			}
		}
		return d.cross(d.touchDevice(dst, nbytes, true)), nil
	}()
	if err != nil {
		return err
	}
	waitUntil(migrated) // outside the lock: the managed pages it touched cross first
	d.ledger.RecordMemset(nbytes, time.Since(start))
	return nil
}
