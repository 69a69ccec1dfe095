package interop

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// PoolIPCDescriptor is what another process needs, beside the pool itself
// (its descriptor, sent with SendPoolFD), to open an array whose memory
// came from a shared stream-ordered pool: the allocation's export data
// (cuMemPoolExportPointer), the array's offset into the allocation, the
// allocation's size and the array's layout. Its JSON form travels with
// the pool's descriptor, or on any other channel.
type PoolIPCDescriptor struct {
	Backend  string         `json:"backend"` // "sim" or "cuda": export data imports only on its own backend
	Device   int            `json:"device"`  // the exporter's device ordinal
	Export   string         `json:"export"`  // the 64 bytes of export data, hex
	Offset   int64          `json:"offset"`  // of element 0 from the start of the allocation, bytes
	Size     int64          `json:"size"`    // of the allocation, bytes
	Shape    []int          `json:"shape"`
	Strides  []int64        `json:"strides"` // bytes
	DType    devarray.DType `json:"dtype"`
	ReadOnly bool           `json:"readonly"`
	data     driver.PoolExportData
}

// ExportPoolIPC describes a, on dev, for a process that imports pool: a is
// alloc, an array of pool's memory (devarray.EmptyAsync on a
// driver.PoolStream of pool), or a view of it. The exporter keeps alloc
// allocated until every importer has freed its import: "The imported
// memory must be freed from all importing processes before being freed in
// the exporting process." (cuMemPoolImportPointer). sim refuses the
// export data of an allocation already freed; what a GPU's driver does is
// not documented.
func ExportPoolIPC(dev driver.Device, pool driver.SharedMemPool, alloc, a *devarray.DevArray) (PoolIPCDescriptor, error) {
	var d PoolIPCDescriptor
	err := devarray.Use(func() error {
		if a.Device() != dev.DeviceID() || alloc.Device() != dev.DeviceID() {
			return fmt.Errorf("the arrays are on %v and %v, not %v: %w", alloc.Device(), a.Device(), dev.DeviceID(), devarray.ErrDevice)
		}
		if alloc.IsView() {
			return fmt.Errorf("alloc is a view: give the array the pool allocated: %w", devarray.ErrNotOwner)
		}
		data, err := pool.ExportPointer(alloc.Ptr())
		if err != nil {
			return err
		}
		size := alloc.NBytes()
		lo, hi := a.Extent()
		off := int64(a.Ptr() - alloc.Ptr())
		if a.Size() > 0 && (a.Ptr() < alloc.Ptr() || off+lo < 0 || off+hi > size) {
			return fmt.Errorf("bytes [%d, %d) of the allocation of %d: %w", off+lo, off+hi, size, devarray.ErrBounds)
		}
		d = PoolIPCDescriptor{
			Backend: dev.Info().Backend, Device: dev.DeviceID().Ordinal, Export: hex.EncodeToString(data[:]),
			Offset: off, Size: size, Shape: a.Shape(), Strides: a.Strides(), DType: a.DType(), ReadOnly: a.ReadOnly(), data: data,
		}
		return nil
	}, alloc, a)
	if err != nil {
		return PoolIPCDescriptor{}, fmt.Errorf("interop: export pool IPC: %w", err)
	}
	return d, nil
}

// ParsePoolIPC reads a PoolIPCDescriptor's JSON, checking the export
// data's form and the layout.
func ParsePoolIPC(data []byte) (PoolIPCDescriptor, error) {
	var d PoolIPCDescriptor
	if err := json.Unmarshal(data, &d); err != nil {
		return PoolIPCDescriptor{}, fmt.Errorf("interop: pool IPC descriptor: %v: %w", err, ErrInterface)
	}
	if err := d.decode(); err != nil {
		return PoolIPCDescriptor{}, fmt.Errorf("interop: pool IPC descriptor: %w", err)
	}
	if err := checkIPCLayout(d.Offset, d.Size, d.Shape, d.Strides, d.DType); err != nil {
		return PoolIPCDescriptor{}, fmt.Errorf("interop: pool IPC descriptor: %w", err)
	}
	return d, nil
}

// decode reads the export data from its hex form.
func (d *PoolIPCDescriptor) decode() error {
	b, err := hex.DecodeString(d.Export)
	if err != nil || len(b) != driver.PoolExportDataSize {
		return fmt.Errorf("export data %q: want %d bytes in hex: %w", d.Export, driver.PoolExportDataSize, ErrInterface)
	}
	copy(d.data[:], b)
	return nil
}

// ImportPool imports the pool another process sent as fd (ReceivePoolFD)
// on dev (cuMemPoolImportFromShareableHandle). fd stays the caller's to
// close. Destroy the pool once its arrays are freed.
func ImportPool(dev driver.Device, fd int) (driver.ImportedMemPool, error) {
	ps, ok := dev.(driver.PoolSharing)
	if !ok {
		return nil, fmt.Errorf("interop: import pool: %v cannot import pools: %w", dev.DeviceID(), errors.ErrUnsupported)
	}
	p, err := ps.ImportMemPool(fd)
	if err != nil {
		return nil, fmt.Errorf("interop: import pool: %w", err)
	}
	return p, nil
}

// OpenPoolIPC maps the array d describes from pool, which was imported on
// dev, as a borrowed DevArray: no copy and no device allocation; the
// mapping is counted in the ledger as kind ipc, and the array's Free frees
// the imported pointer (counted too). Export data of another pool, of
// another backend or garbage is an error, and nothing stays mapped; so is
// data whose allocation the exporter freed, whose pool it destroyed or
// whose process has exited, on sim (driver.ErrStaleIPCHandle).
func OpenPoolIPC(dev driver.Device, pool driver.ImportedMemPool, d PoolIPCDescriptor) (*devarray.DevArray, error) {
	if d.Backend != dev.Info().Backend {
		return nil, fmt.Errorf("interop: open pool IPC: %q export data cannot import on %v: %w", d.Backend, dev.DeviceID(), ErrInterface)
	}
	if d.data == (driver.PoolExportData{}) {
		if err := d.decode(); err != nil {
			return nil, fmt.Errorf("interop: open pool IPC: %w", err)
		}
	}
	base, size, err := pool.ImportPointer(d.data)
	if err != nil {
		return nil, fmt.Errorf("interop: open pool IPC: %w", err)
	}
	if size < d.Size {
		return nil, errors.Join(fmt.Errorf("interop: open pool IPC: the allocation holds %d bytes, the descriptor says %d: %w", size, d.Size, ErrInterface), pool.FreePointer(base))
	}
	desc := devarray.Descriptor{Ptr: base + devarray.Ptr(d.Offset), Shape: d.Shape, Strides: d.Strides, DType: d.DType, Device: dev.DeviceID(), ReadOnly: d.ReadOnly}
	a, err := devarray.Wrap(dev, desc, devarray.WithBounds(base, d.Size), devarray.OnFree(func() error { return pool.FreePointer(base) }))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("interop: open pool IPC: %w", err), pool.FreePointer(base))
	}
	return a, nil
}
