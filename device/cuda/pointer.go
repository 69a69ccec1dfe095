//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// PointerInfo is what the driver knows of an address, from
// cuPointerGetAttributes: used to classify a foreign pointer on import.
type PointerInfo struct {
	Kind    devarray.DeviceKind // CUDA, CUDAHost (page-locked host) or CUDAManaged
	Ordinal int                 // the GPU the memory belongs to
	Base    devarray.Ptr        // start of the allocation that holds the address
	Size    int64               // size of that allocation in bytes
}

// PointerInfo classifies p. An address the driver does not know (pageable
// host memory, or garbage) is an error wrapping driver.ErrInvalidPointer.
func (d *Device) PointerInfo(p devarray.Ptr) (PointerInfo, error) {
	var a pointerAttrs
	err := d.call(func() error {
		var c int
		a, c = pointerAttributes(uintptr(p))
		return check(c)
	})
	if err != nil {
		return PointerInfo{}, fmt.Errorf("cuda: pointer %v: %w: %w", p, driver.ErrInvalidPointer, err)
	}
	info := PointerInfo{Ordinal: a.ordinal, Base: devarray.Ptr(a.start), Size: int64(a.size)}
	switch {
	case a.managed:
		info.Kind = devarray.CUDAManaged
	case a.memType == memHost:
		info.Kind = devarray.CUDAHost
	case a.memType == memDevice || a.memType == memUnified:
		info.Kind = devarray.CUDA
	default:
		return PointerInfo{}, fmt.Errorf("cuda: pointer %v: memory type %d is not host or device: %w", p, a.memType, driver.ErrInvalidPointer)
	}
	return info, nil
}

// IPCHandle names a device allocation for another process (cuIpcGetMemHandle).
type IPCHandle = driver.IPCHandle

// IPCExport returns the handle of the allocation that holds p, with the
// allocation's base and size (cuPointerGetAttributes, cuIpcGetMemHandle).
func (d *Device) IPCExport(p devarray.Ptr) (IPCHandle, devarray.Ptr, int64, error) {
	info, err := d.PointerInfo(p)
	if err != nil {
		return IPCHandle{}, 0, 0, fmt.Errorf("cuda: IPC export: %w", err)
	}
	if info.Kind != devarray.CUDA || info.Ordinal != d.ordinal {
		return IPCHandle{}, 0, 0, fmt.Errorf("cuda: IPC export %v: %v memory of GPU %d is not this device's memory: %w", p, info.Kind, info.Ordinal, driver.ErrInvalidPointer)
	}
	var h IPCHandle
	err = d.call(func() error {
		var c int
		h, c = ipcGetMemHandle(uintptr(info.Base))
		return check(c)
	})
	if err != nil {
		return IPCHandle{}, 0, 0, fmt.Errorf("cuda: IPC export %v: %w", p, err)
	}
	return h, info.Base, info.Size, nil
}

// ipcTable is what a device opened of other processes' allocations.
type ipcTable struct {
	mu       sync.Mutex // held through IPCOpen and IPCClose
	opened   map[uintptr]*ipcMapping
	byHandle map[IPCHandle]uintptr

	pools         []*importedPool // the pools ImportMemPool imported, not destroyed (mempool_ipc.go)
	importedPools int             // pools imported, for their names
}

// ipcMapping is one opened allocation.
type ipcMapping struct {
	handle IPCHandle
	size   int64
	refs   int // IPCOpen calls not yet matched by an IPCClose
}

// IPCOpen maps another process's allocation into this one
// (cuIpcOpenMemHandle, peer access enabled lazily), counted as kind ipc
// until IPCClose. The driver refuses a second cuIpcOpenMemHandle of one
// handle in a context, so a handle already open here is not opened again:
// IPCOpen returns the same address and counts the open, and the memory
// stays mapped until as many IPCClose calls. A handle of this process is
// refused with driver.ErrOwnIPCHandle (the driver says
// CUDA_ERROR_INVALID_CONTEXT), one whose allocation was freed with
// driver.ErrStaleIPCHandle (CUDA_ERROR_INVALID_VALUE, which garbage
// also gets: the driver cannot tell the two apart).
func (d *Device) IPCOpen(h IPCHandle) (devarray.Ptr, int64, error) {
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	if p, ok := d.ipc.byHandle[h]; ok {
		m := d.ipc.opened[p]
		m.refs++
		return devarray.Ptr(p), m.size, nil
	}
	if err := d.closedErr("IPC open"); err != nil {
		return 0, 0, err
	}
	var p uintptr
	err := d.call(func() error {
		var c int
		p, c = ipcOpenMemHandle(h)
		return check(c)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: IPC open: %w", ipcOpenError(err))
	}
	info, err := d.PointerInfo(devarray.Ptr(p))
	if err != nil {
		d.callAlways(func() error { return check(ipcCloseMemHandle(p)) })
		return 0, 0, fmt.Errorf("cuda: IPC open: %w", err)
	}
	if err := d.ledger.Alloc(accounting.IPC, p, info.Size); err != nil {
		d.callAlways(func() error { return check(ipcCloseMemHandle(p)) })
		return 0, 0, fmt.Errorf("cuda: IPC open: %w", err)
	}
	if d.ipc.opened == nil {
		d.ipc.opened, d.ipc.byHandle = make(map[uintptr]*ipcMapping), make(map[IPCHandle]uintptr)
	}
	d.ipc.opened[p] = &ipcMapping{handle: h, size: info.Size, refs: 1}
	d.ipc.byHandle[h] = p
	return devarray.Ptr(p), info.Size, nil
}

// ipcOpenError says what a refusal of cuIpcOpenMemHandle means.
func ipcOpenError(err error) error {
	var de *DriverError
	if !errors.As(err, &de) {
		return err
	}
	switch de.Code {
	case codeInvalidContext:
		// Not a closed context: d.call made it current.
		return fmt.Errorf("%w (the driver said %v)", driver.ErrOwnIPCHandle, err)
	case codeInvalidValue:
		return fmt.Errorf("%w, or the bytes are not a CUDA IPC handle: %w", driver.ErrStaleIPCHandle, err)
	}
	return err
}

// IPCClose undoes one IPCOpen of the allocation at p, and unmaps it at the
// last (cuIpcCloseMemHandle). When the driver refuses to unmap it, the
// mapping stays open, in the table and the ledger alike: IPCClose may be
// tried again, and Close unmaps it and lets go of it in both.
func (d *Device) IPCClose(p devarray.Ptr) error {
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	m, ok := d.ipc.opened[uintptr(p)]
	if !ok {
		return fmt.Errorf("cuda: IPC close %v: not opened by IPCOpen: %w", p, driver.ErrInvalidPointer)
	}
	if m.refs > 1 {
		m.refs--
		return nil
	}
	// A refusal leaves the memory mapped: it stays in the table and the
	// ledger, for a later IPCClose or Close to unmap.
	if err := d.call(func() error { return check(ipcCloseMemHandle(uintptr(p))) }); err != nil {
		return fmt.Errorf("cuda: IPC close %v: the mapping stays open: %w", p, err)
	}
	delete(d.ipc.opened, uintptr(p))
	delete(d.ipc.byHandle, m.handle)
	d.ledger.Free(accounting.IPC, uintptr(p), m.size)
	return nil
}

// closeAll unmaps every allocation still opened (the device is closing).
func (t *ipcTable) closeAll(d *Device) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first error
	for p, m := range t.opened {
		if err := d.callAlways(func() error { return check(ipcCloseMemHandle(p)) }); err != nil && first == nil {
			first = fmt.Errorf("IPC close %#x: %w", p, err)
		}
		d.ledger.Free(accounting.IPC, p, m.size)
	}
	t.opened, t.byHandle = nil, nil
	for _, ip := range slices.Clone(t.pools) {
		if err := ip.destroyLocked(d.callAlways); err != nil && first == nil {
			first = err
		}
	}
	return first
}
