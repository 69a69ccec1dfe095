package interop

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// IPCDescriptor is what another process needs to open an array of this
// one: the IPC handle of the allocation that holds it, the array's offset
// into that allocation, the allocation's size, and the array's layout. Its
// JSON form travels between processes (a pipe, a file, a socket).
type IPCDescriptor struct {
	Backend  string         `json:"backend"` // "sim" or "cuda": a handle opens only on its own backend
	Device   int            `json:"device"`  // the exporter's device ordinal
	Handle   string         `json:"handle"`  // the 64-byte handle, hex
	Offset   int64          `json:"offset"`  // of element 0 from the start of the allocation, bytes
	Size     int64          `json:"size"`    // of the allocation, bytes
	Shape    []int          `json:"shape"`
	Strides  []int64        `json:"strides"` // bytes
	DType    devarray.DType `json:"dtype"`
	ReadOnly bool           `json:"readonly"`
	handle   driver.IPCHandle
}

// ExportIPC describes a, on dev, for another process. The exporter must
// keep a's memory allocated while other processes use it; freeing it makes
// the handle stale for processes that open it later: sim refuses a stale
// handle, but a GPU's driver may open it (an H100 with driver 580.159.04
// did), mapping memory that is no longer the exporter's, so the exporter
// must tell the others when the handle is gone.
func ExportIPC(dev driver.Device, a *devarray.DevArray) (IPCDescriptor, error) {
	var d IPCDescriptor
	err := devarray.Use(func() error {
		if a.Device() != dev.DeviceID() {
			return fmt.Errorf("the array is on %v, not %v: %w", a.Device(), dev.DeviceID(), devarray.ErrDevice)
		}
		h, base, size, err := dev.IPCExport(a.Ptr())
		if err != nil {
			return err
		}
		lo, hi := a.Extent()
		off := int64(a.Ptr() - base)
		if a.Size() > 0 && (off+lo < 0 || off+hi > size) {
			return fmt.Errorf("bytes [%d, %d) of the allocation of %d: %w", off+lo, off+hi, size, devarray.ErrBounds)
		}
		d = IPCDescriptor{
			Backend: dev.Info().Backend, Device: dev.DeviceID().Ordinal, Handle: hex.EncodeToString(h[:]),
			Offset: off, Size: size, Shape: a.Shape(), Strides: a.Strides(), DType: a.DType(), ReadOnly: a.ReadOnly(), handle: h,
		}
		return nil
	}, a)
	if err != nil {
		return IPCDescriptor{}, fmt.Errorf("interop: export IPC: %w", err)
	}
	return d, nil
}

// ParseIPC reads an IPCDescriptor's JSON, checking the handle's form.
func ParseIPC(data []byte) (IPCDescriptor, error) {
	var d IPCDescriptor
	if err := json.Unmarshal(data, &d); err != nil {
		return IPCDescriptor{}, fmt.Errorf("interop: IPC descriptor: %v: %w", err, ErrInterface)
	}
	h, err := hex.DecodeString(d.Handle)
	if err != nil || len(h) != driver.IPCHandleSize {
		return IPCDescriptor{}, fmt.Errorf("interop: IPC descriptor: handle %q: want %d bytes in hex: %w", d.Handle, driver.IPCHandleSize, ErrInterface)
	}
	copy(d.handle[:], h)
	if err := checkIPCLayout(d.Offset, d.Size, d.Shape, d.Strides, d.DType); err != nil {
		return IPCDescriptor{}, fmt.Errorf("interop: IPC descriptor: %w", err)
	}
	return d, nil
}

// checkIPCLayout checks the layout an IPC descriptor gives: offset and
// size, a valid dtype, one stride per axis, no negative extent.
func checkIPCLayout(offset, size int64, shape []int, strides []int64, dtype devarray.DType) error {
	if size < 0 || offset < 0 {
		return fmt.Errorf("offset %d, size %d: %w", offset, size, ErrInterface)
	}
	if !dtype.Valid() {
		return fmt.Errorf("no valid dtype: %w", ErrInterface)
	}
	if strides != nil && len(strides) != len(shape) {
		return fmt.Errorf("%d strides for %d axes: %w", len(strides), len(shape), ErrInterface)
	}
	for _, n := range shape {
		if n < 0 {
			return fmt.Errorf("shape %v: %w", shape, ErrInterface)
		}
	}
	return nil
}

// OpenIPC maps the array another process exported into this one, on dev,
// as a borrowed DevArray: no copy and no device allocation; the mapping is
// counted in the ledger as kind ipc, and the array's Free closes it (also
// counted). A handle of this process, one of another backend or garbage is
// an error, and nothing stays mapped; so is a stale handle (the exporter
// freed the memory or exited) on sim, while a GPU's driver may open it
// (see ExportIPC).
func OpenIPC(dev driver.Device, d IPCDescriptor) (*devarray.DevArray, error) {
	if d.Backend != dev.Info().Backend {
		return nil, fmt.Errorf("interop: open IPC: a %q handle cannot open on %v: %w", d.Backend, dev.DeviceID(), ErrInterface)
	}
	if d.handle == (driver.IPCHandle{}) {
		parsed, err := hex.DecodeString(d.Handle)
		if err != nil || len(parsed) != driver.IPCHandleSize {
			return nil, fmt.Errorf("interop: open IPC: handle %q: %w", d.Handle, ErrInterface)
		}
		copy(d.handle[:], parsed)
	}
	base, size, err := dev.IPCOpen(d.handle)
	if err != nil {
		return nil, fmt.Errorf("interop: open IPC: %w", err)
	}
	if size < d.Size {
		return nil, errors.Join(fmt.Errorf("interop: open IPC: the allocation holds %d bytes, the descriptor says %d: %w", size, d.Size, ErrInterface), dev.IPCClose(base))
	}
	desc := devarray.Descriptor{Ptr: base + devarray.Ptr(d.Offset), Shape: d.Shape, Strides: d.Strides, DType: d.DType, Device: dev.DeviceID(), ReadOnly: d.ReadOnly}
	a, err := devarray.Wrap(dev, desc, devarray.WithBounds(base, size), devarray.OnFree(func() error { return dev.IPCClose(base) }))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("interop: open IPC: %w", err), dev.IPCClose(base))
	}
	return a, nil
}
