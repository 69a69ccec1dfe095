//go:build cuda

package cuda

import (
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// PageableAccess reads the device's CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS
// ("Device supports coherently accessing pageable memory without calling
// cudaHostRegister on it") and
// CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES
// ("Device accesses pageable memory via the host's page tables"), the
// Driver API's words in cuda.h; driver.PageableNone when they cannot be read.
func (d *Device) PageableAccess() driver.PageableAccess {
	var access, tables int
	err := d.call(func() error {
		var c int
		if access, c = deviceGetAttribute(attrPageableAccess, d.ordinal); c != 0 {
			return check(c)
		}
		tables, c = deviceGetAttribute(attrPageableHostTables, d.ordinal)
		return check(c)
	})
	if err != nil {
		return driver.PageableNone
	}
	return driver.PageableAccessOf(access, tables)
}

// UsePageable returns b's host address, at which a device with pageable
// memory access reads and writes it in place; on a device without, an
// error wrapping driver.ErrNoPageableAccess. The driver needs no call: on
// such a device "pageable memory" is reached "without calling
// cudaHostRegister on it". The emulated driver is told of b
// (declarePageable), as its interpreter reaches only declared host memory.
func (d *Device) UsePageable(b []byte) (devarray.Ptr, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("cuda: use pageable memory in place: no bytes: %w", driver.ErrInvalidValue)
	}
	if a := d.PageableAccess(); !a.Supported() {
		return 0, fmt.Errorf("cuda: use pageable memory in place on %v: pageable access %v: %w", d.DeviceID(), a, driver.ErrNoPageableAccess)
	}
	if err := d.call(func() error { return declarePageable(b) }); err != nil {
		return 0, fmt.Errorf("cuda: use pageable memory in place: %w", err)
	}
	return devarray.Ptr(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), nil
}

// ReleasePageable ends a UsePageable of b; after Close there is nothing
// left to end.
func (d *Device) ReleasePageable(b []byte) error {
	if d.isClosed.Load() {
		return nil
	}
	if err := d.call(func() error { return releasePageable(b) }); err != nil {
		return fmt.Errorf("cuda: release pageable memory: %w", err)
	}
	return nil
}
