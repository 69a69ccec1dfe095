package sim

import "github.com/cuarray/cuarray/devarray"

// Requested returns how many bytes the program asked Malloc for in the
// live device allocation that starts at p: the allocation's size without
// its alignment padding, as the CUDA driver reports an allocation's range
// (cuMemGetAddressRange, CU_POINTER_ATTRIBUTE_RANGE_SIZE). ok is false
// where no live device allocation starts at p.
func (d *Device) Requested(p devarray.Ptr) (n int64, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	addr := uintptr(p)
	if a := d.managed.mappedAt(addr, 1); a != nil && !d.closed {
		return a.asked, a.base == addr
	}
	if d.closed || addr < d.base || addr >= d.base+uintptr(d.arena.size) {
		return 0, false
	}
	s, ok := d.arena.find(int64(addr-d.base), 1)
	if !ok || s.off != int64(addr-d.base) {
		return 0, false
	}
	return min(d.requested[s.off], s.size), true
}
