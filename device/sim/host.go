package sim

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// HostAlloc allocates n bytes of page-locked host memory, emulated by an
// anonymous mapping. With Mapped, the memory's device address is its host
// address (as with unified addressing), and device copies may use it;
// with WriteCombined too, it has a device address of its own (alias.go). A
// Mapped request fails with driver.ErrNotMapped on a device configured
// NoMapHost, as on a context without CU_CTX_MAP_HOST.
func (d *Device) HostAlloc(n int64, flags driver.HostFlags) (*driver.HostMem, error) {
	if n <= 0 || flags&^driver.AllocFlags != 0 {
		return nil, fmt.Errorf("sim: host alloc %d bytes, flags %v: want a positive size and known flags: %w", n, flags, driver.ErrInvalidValue)
	}
	if flags&driver.Mapped != 0 && d.cfg.NoMapHost {
		return nil, fmt.Errorf("sim: host alloc with flag Mapped: %w", driver.ErrNotMapped)
	}
	if err := d.checkFault("host alloc"); err != nil {
		return nil, err
	}
	kind := flags.LedgerKind()
	if err := d.ledger.Reserve(kind, n); err != nil {
		return nil, fmt.Errorf("sim: host alloc: %w", err)
	}
	if injected(&d.allocCountdown) {
		d.ledger.Cancel(kind, n)
		return nil, fmt.Errorf("sim: host alloc %d bytes: %w", n, driver.ErrInjected)
	}
	mem, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		d.ledger.Cancel(kind, n)
		if errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EINVAL) {
			// what cuMemHostAlloc says when the host cannot give that much
			d.ledger.RecordFailure(kind, n)
			return nil, fmt.Errorf("sim: host alloc %d bytes: %v: %w", n, err, d.ledger.OutOfMemory(kind, n, d.ledger.Current(kind), false))
		}
		return nil, fmt.Errorf("sim: host alloc %d bytes: %w", n, err)
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	var dev uintptr
	if distinctDeviceAddress(flags, false) {
		if dev, err = d.aliases.add(addr, n); err != nil {
			d.ledger.Cancel(kind, n)
			syscall.Munmap(mem)
			return nil, fmt.Errorf("sim: host alloc: %w", err)
		}
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.ledger.Cancel(kind, n)
		syscall.Munmap(mem)
		d.aliases.remove(dev)
		return nil, fmt.Errorf("sim: host alloc: %w", driver.ErrClosed)
	}
	r := driver.HostRange{Addr: addr, Mem: mem, Flags: flags, DevAddr: dev}
	d.host.Insert(r)
	d.mu.Unlock()
	d.ledger.Commit(kind, addr, n)
	h := &driver.HostMem{Bytes: mem, Flags: flags}
	if flags&driver.Mapped != 0 {
		h.DevPtr = devarray.Ptr(r.Device())
	}
	return h, nil
}

// HostFree frees memory from HostAlloc and clears h, whose Bytes must not be
// used afterwards. Freeing memory this device did not allocate, or freeing
// twice, is an error wrapping driver.ErrInvalidPointer.
func (d *Device) HostFree(h *driver.HostMem) error {
	if err := d.checkHostFree("host free", h); err != nil {
		return err
	}
	a, err := d.takeHost("host free", h, false)
	if err != nil {
		return err
	}
	d.aliases.remove(a.DevAddr)
	if err := syscall.Munmap(a.Mem); err != nil {
		return fmt.Errorf("sim: host free: %w", err)
	}
	d.ledger.Free(a.Kind(), a.Addr, int64(len(a.Mem)))
	h.Bytes, h.DevPtr = nil, 0
	return nil
}

// Register page-locks b, memory the program already has, as
// cuMemHostRegister does; on sim nothing is locked, but the range is
// recorded, so copies from it count as pinned and, with Mapped, the device
// may use it in place at a device address of its own (alias.go: h.DevPtr,
// not the host address). Portable and Mapped are the only
// flags that apply. Memory that overlaps a live page-locked range is
// refused, as the driver refuses it (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED).
// The ledger counts the bytes as Registered. Undo with Unregister.
func (d *Device) Register(b []byte, flags driver.HostFlags) (*driver.HostMem, error) {
	if len(b) == 0 || flags&^(driver.Portable|driver.Mapped) != 0 {
		return nil, fmt.Errorf("sim: register %d bytes, flags %v: want memory and only Portable or Mapped: %w", len(b), flags, driver.ErrInvalidValue)
	}
	if flags&driver.Mapped != 0 && d.cfg.NoMapHost {
		return nil, fmt.Errorf("sim: register with flag Mapped: context flags %q: %w", d.contextFlags(), driver.ErrNotMapped)
	}
	if err := d.checkFault("register"); err != nil {
		return nil, err
	}
	n := int64(len(b))
	if err := d.ledger.Reserve(accounting.Registered, n); err != nil {
		return nil, fmt.Errorf("sim: register: %w", err)
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	var dev uintptr
	var err error
	if distinctDeviceAddress(flags, true) {
		if dev, err = d.aliases.add(addr, n); err != nil {
			d.ledger.Cancel(accounting.Registered, n)
			return nil, fmt.Errorf("sim: register: %w", err)
		}
	}
	r := driver.HostRange{Addr: addr, Mem: b, Flags: flags, Registered: true, DevAddr: dev}
	d.mu.Lock()
	switch {
	case d.closed:
		err = driver.ErrClosed
	case d.host.Overlaps(addr, n):
		err = fmt.Errorf("bytes [0x%x, +%d) overlap memory that is already page-locked: %w", addr, n, driver.ErrAlreadyLocked)
	default:
		d.host.Insert(r)
	}
	d.mu.Unlock()
	if err != nil {
		d.ledger.Cancel(accounting.Registered, n)
		d.aliases.remove(dev)
		return nil, fmt.Errorf("sim: register: %w", err)
	}
	d.ledger.Commit(accounting.Registered, addr, n)
	h := &driver.HostMem{Bytes: b, Flags: flags}
	if flags&driver.Mapped != 0 {
		h.DevPtr = devarray.Ptr(r.Device())
	}
	return h, nil
}

// Unregister undoes Register. The memory stays the caller's; only h's
// device pointer is cleared. Unregistering memory that was not registered,
// or twice, is an error wrapping driver.ErrInvalidPointer.
func (d *Device) Unregister(h *driver.HostMem) error {
	if err := d.checkHostFree("unregister", h); err != nil {
		return err
	}
	a, err := d.takeHost("unregister", h, true)
	if err != nil {
		return err
	}
	d.ledger.Free(accounting.Registered, a.Addr, int64(len(a.Mem)))
	d.aliases.remove(a.DevAddr)
	h.DevPtr = 0
	return nil
}

// takeHost removes h's range from the live page-locked ranges: allocated
// memory for HostFree, registered memory for Unregister.
func (d *Device) takeHost(op string, h *driver.HostMem, registered bool) (driver.HostRange, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return driver.HostRange{}, fmt.Errorf("sim: %s: %w", op, driver.ErrClosed)
	}
	if err := d.checkFault(op); err != nil {
		return driver.HostRange{}, err // the memory stays page-locked until Close
	}
	a, err := d.host.Take(h, registered)
	if err != nil {
		return driver.HostRange{}, fmt.Errorf("sim: %s: %w", op, err)
	}
	return a, nil
}
