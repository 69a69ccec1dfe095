package driver

import (
	"errors"

	"github.com/cuarray/cuarray/devarray"
)

// MapNew makes size bytes of physical memory and maps them at p, in a
// reservation of vm, readable and writable (CreatePhysical, MapMemory,
// SetAccess): one step of growing a range in place. A failure half-way
// unmaps and releases what it did. p and size are multiples of the minimum
// granularity.
func MapNew(vm VirtualMemory, p devarray.Ptr, size int64) (PhysicalHandle, error) {
	h, err := vm.CreatePhysical(size)
	if err != nil {
		return 0, err
	}
	if err := vm.MapMemory(p, size, 0, h); err != nil {
		return 0, errors.Join(err, vm.ReleasePhysical(h))
	}
	if err := vm.SetAccess(p, size, true); err != nil {
		return 0, errors.Join(err, vm.UnmapMemory(p, size), vm.ReleasePhysical(h))
	}
	return h, nil
}

// UnmapRelease undoes MapNew: it unmaps [p, p+size) and releases h, the
// physical memory mapped there. When the unmap fails, h is not released.
func UnmapRelease(vm VirtualMemory, p devarray.Ptr, size int64, h PhysicalHandle) error {
	if err := vm.UnmapMemory(p, size); err != nil {
		return err
	}
	return vm.ReleasePhysical(h)
}
