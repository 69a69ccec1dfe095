//go:build cuda

package cuda

import (
	"fmt"

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

// IPCOpen maps another process's allocation into this one
// (cuIpcOpenMemHandle, peer access enabled lazily), counted as kind ipc
// until IPCClose. A handle from this process, a stale one or garbage is an
// error.
func (d *Device) IPCOpen(h IPCHandle) (devarray.Ptr, int64, error) {
	var p uintptr
	err := d.call(func() error {
		var c int
		p, c = ipcOpenMemHandle(h)
		return check(c)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: IPC open: %w", err)
	}
	info, err := d.PointerInfo(devarray.Ptr(p))
	if err != nil {
		d.call(func() error { return check(ipcCloseMemHandle(p)) })
		return 0, 0, fmt.Errorf("cuda: IPC open: %w", err)
	}
	if err := d.ledger.Alloc(accounting.IPC, p, info.Size); err != nil {
		d.call(func() error { return check(ipcCloseMemHandle(p)) })
		return 0, 0, fmt.Errorf("cuda: IPC open: %w", err)
	}
	d.ipcMu.Lock()
	d.ipcOpened[p] = info.Size
	d.ipcMu.Unlock()
	return devarray.Ptr(p), info.Size, nil
}

// IPCClose unmaps memory opened with IPCOpen (cuIpcCloseMemHandle).
func (d *Device) IPCClose(p devarray.Ptr) error {
	d.ipcMu.Lock()
	size, ok := d.ipcOpened[uintptr(p)]
	delete(d.ipcOpened, uintptr(p))
	d.ipcMu.Unlock()
	if !ok {
		return fmt.Errorf("cuda: IPC close %v: not opened by IPCOpen: %w", p, driver.ErrInvalidPointer)
	}
	if err := d.call(func() error { return check(ipcCloseMemHandle(uintptr(p))) }); err != nil {
		return fmt.Errorf("cuda: IPC close %v: %w", p, err)
	}
	d.ledger.Free(accounting.IPC, uintptr(p), size)
	return nil
}
