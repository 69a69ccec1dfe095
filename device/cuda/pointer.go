//go:build cuda

package cuda

import (
	"fmt"

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

// IPCHandleSize is the size of a CUDA IPC memory handle.
const IPCHandleSize = ipcHandleSize

// IPCHandle names a device allocation for another process (cuIpcGetMemHandle).
type IPCHandle [IPCHandleSize]byte

// IPCExport returns the handle of the allocation that starts at p.
func (d *Device) IPCExport(p devarray.Ptr) (IPCHandle, error) {
	var h IPCHandle
	err := d.call(func() error {
		var c int
		h, c = ipcGetMemHandle(uintptr(p))
		return check(c)
	})
	if err != nil {
		return IPCHandle{}, fmt.Errorf("cuda: IPC export %v: %w", p, err)
	}
	return h, nil
}

// IPCOpen maps another process's allocation into this one
// (cuIpcOpenMemHandle, peer access enabled lazily). A handle from this
// process, a stale one or garbage is an error. Close it with IPCClose.
func (d *Device) IPCOpen(h IPCHandle) (devarray.Ptr, error) {
	var p uintptr
	err := d.call(func() error {
		var c int
		p, c = ipcOpenMemHandle(h)
		return check(c)
	})
	if err != nil {
		return 0, fmt.Errorf("cuda: IPC open: %w", err)
	}
	return devarray.Ptr(p), nil
}

// IPCClose unmaps memory opened with IPCOpen (cuIpcCloseMemHandle).
func (d *Device) IPCClose(p devarray.Ptr) error {
	if err := d.call(func() error { return check(ipcCloseMemHandle(uintptr(p))) }); err != nil {
		return fmt.Errorf("cuda: IPC close %v: %w", p, err)
	}
	return nil
}
