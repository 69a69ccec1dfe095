package sim

import (
	"fmt"
	"slices"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Looking up virtual memory: the reservation and the mappings an address
// lies in, for copies (devMem), kernels (resolve) and Allocation.

// rangeAt returns the reservation that starts at a, and its index.
func (v *vmmState) rangeAt(a uintptr) (int, *vaRange) {
	i, ok := slices.BinarySearchFunc(v.ranges, a, rangeByStart)
	if !ok {
		return 0, nil
	}
	return i, v.ranges[i]
}

// rangeContaining returns the reservation that holds all of [a, a+n), if
// one does.
func (v *vmmState) rangeContaining(a uintptr, n int64) (int, *vaRange) {
	i, ok := slices.BinarySearchFunc(v.ranges, a, rangeByStart)
	if !ok {
		i--
	}
	if i < 0 || i >= len(v.ranges) {
		return 0, nil
	}
	r := v.ranges[i]
	if a < r.start || n < 0 || int64(a-r.start) > r.size-n {
		return 0, nil
	}
	return i, r
}

// accessible returns the run of accessible mappings, one after another with
// no gap, that holds [a, a+n): its start and its bytes. ok is false when a
// is not in a reservation; err says why the bytes cannot be touched when a
// is in one. d.mu is held for reading.
func (v *vmmState) accessible(a uintptr, n int64) (start uintptr, mem []byte, inRange bool, err error) {
	if !v.active.Load() {
		return 0, nil, false, nil
	}
	_, r := v.rangeContaining(a, 1)
	if r == nil {
		return 0, nil, false, nil
	}
	off := int64(a - r.start)
	i, found := slices.BinarySearchFunc(r.maps, off, mappingByOffset)
	if !found {
		i--
	}
	if i < 0 || off >= r.maps[i].off+r.maps[i].size {
		return 0, nil, true, fmt.Errorf("bytes [%#x, +%d) are reserved but not mapped (cuMemMap): %w", a, n, driver.ErrInvalidPointer)
	}
	// The run of accessible mappings around the address.
	lo := i
	for lo > 0 && r.maps[lo-1].access && r.maps[lo-1].off+r.maps[lo-1].size == r.maps[lo].off {
		lo--
	}
	hi := i
	for hi+1 < len(r.maps) && r.maps[hi+1].access && r.maps[hi].off+r.maps[hi].size == r.maps[hi+1].off {
		hi++
	}
	if !r.maps[i].access {
		return 0, nil, true, fmt.Errorf("bytes [%#x, +%d) are mapped but their access was never set (cuMemSetAccess): %w", a, n, driver.ErrInvalidPointer)
	}
	runStart, runEnd := r.maps[lo].off, r.maps[hi].off+r.maps[hi].size
	if off+n > runEnd {
		return 0, nil, true, fmt.Errorf("bytes [%#x, +%d) run past the accessible mapped memory: %w", a, n, driver.ErrInvalidPointer)
	}
	return r.start + uintptr(runStart), r.host.bytes(runStart, runEnd-runStart), true, nil
}

// isPhysical reports whether the arena allocation at off is physical
// memory, which has no device address of its own. d.mu is held.
func (v *vmmState) isPhysical(off int64) bool {
	if !v.active.Load() {
		return false
	}
	_, ok := v.physAt[off]
	return ok
}

// vmmAllocation returns the mapping that holds a, for Allocation
// (cuMemGetAddressRange). d.mu is held for reading.
func (v *vmmState) vmmAllocation(a uintptr) (devarray.Ptr, int64, bool) {
	if !v.active.Load() {
		return 0, 0, false
	}
	_, r := v.rangeContaining(a, 1)
	if r == nil {
		return 0, 0, false
	}
	off := int64(a - r.start)
	for _, m := range r.maps {
		if off >= m.off && off < m.off+m.size {
			return devarray.Ptr(r.start + uintptr(m.off)), m.size, true
		}
	}
	return 0, 0, false
}

// InVirtualMemory reports whether [p, p+n) lies in mapped virtual memory
// of d whose access is set, in mappings that follow one another: memory a
// copy may touch though it spans several mappings (the emulated CUDA
// driver asks, as its copies check their ranges by allocation).
func (d *Device) InVirtualMemory(p devarray.Ptr, n int64) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed || n < 0 {
		return false
	}
	_, _, in, err := d.vmm.accessible(uintptr(p), max(n, 1))
	return in && err == nil
}
