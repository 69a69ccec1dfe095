package sim

import (
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
)

// The rules of virtual memory management that sim keeps, each with the
// sentence of the CUDA Driver API page it follows; a refusal wraps
// driver.ErrInvalidValue (CUDA_ERROR_INVALID_VALUE).

func granular(n int64) bool { return n%VMMGranularity == 0 }

// checkReserve: "The size and address parameters must be a multiple of
// the host page size and the alignment must be a power of two or zero for
// default alignment." (cuMemAddressReserve) sim asks for a multiple of
// the granularity, which every mapping in the range needs anyway (a guess,
// stricter than the page: the driver may round a page-sized range up).
func checkReserve(size, alignment int64) error {
	switch {
	case size <= 0 || !granular(size):
		return fmt.Errorf("size %d bytes is not a positive multiple of the granularity (%d): %w", size, VMMGranularity, driver.ErrInvalidValue)
	case alignment < 0 || alignment&(alignment-1) != 0:
		return fmt.Errorf("alignment %d is not a power of two or 0: %w", alignment, driver.ErrInvalidValue)
	}
	return nil
}

// checkAddressFree: "The size must match what was given to
// memAddressReserve and the ptr given must match what was returned from
// memAddressReserve." (cuMemAddressFree) A range with memory still mapped
// is refused too (a guess: the page does not say; unmapping first is what
// every example does).
func checkAddressFree(r *vaRange, p uintptr, size int64) error {
	switch {
	case r == nil || r.start != p:
		return fmt.Errorf("not the start of a reservation: %w", driver.ErrInvalidValue)
	case r.size != size:
		return fmt.Errorf("%d bytes, but %d were reserved: %w", size, r.size, driver.ErrInvalidValue)
	case len(r.maps) > 0:
		return fmt.Errorf("%d mappings are still in the range (cuMemUnmap them first): %w", len(r.maps), driver.ErrInvalidValue)
	}
	return nil
}

// checkCreate: "The size of this allocation must be a multiple of the the
// value given via cuMemGetAllocationGranularity with the
// CU_MEM_ALLOC_GRANULARITY_MINIMUM flag." (cuMemCreate)
func checkCreate(size int64) error {
	if size <= 0 || !granular(size) {
		return fmt.Errorf("size %d bytes is not a positive multiple of the granularity (%d): %w", size, VMMGranularity, driver.ErrInvalidValue)
	}
	return nil
}

// checkMap: "This range must be an address reservation previously
// reserved with cuMemAddressReserve, and offset + size must be less than
// the size of the memory allocation. Both ptr, size, and offset must be a
// multiple of the value given via cuMemGetAllocationGranularity with the
// CU_MEM_ALLOC_GRANULARITY_MINIMUM flag." (cuMemMap) "Less than" is read
// as "at most": mapping a whole allocation is what every example does.
// A range already mapped is no reservation any more ("When cuMemUnmap
// returns successfully the address range is converted to an address
// reservation", cuMemUnmap): mapping over it is refused.
func checkMap(r *vaRange, p uintptr, size, offset int64, ph *physical) error {
	switch {
	case ph == nil || ph.released:
		return fmt.Errorf("not a live physical handle: %w", driver.ErrInvalidValue)
	case r == nil:
		return fmt.Errorf("the range is not inside one reservation: %w", driver.ErrInvalidValue)
	case size <= 0 || !granular(size) || !granular(offset) || !granular(int64(p-r.start)):
		return fmt.Errorf("address, size and offset must be multiples of the granularity (%d): %w", VMMGranularity, driver.ErrInvalidValue)
	case offset < 0 || offset > ph.size-size:
		return fmt.Errorf("offset + size is past the physical memory's %d bytes: %w", ph.size, driver.ErrInvalidValue)
	}
	off := int64(p - r.start)
	for _, m := range r.maps {
		if off < m.off+m.size && m.off < off+size {
			return fmt.Errorf("bytes [+%d, +%d) of the range are mapped already: %w", m.off, m.off+m.size, driver.ErrInvalidValue)
		}
	}
	return nil
}

// checkUnmap: "The range must be the entire contiguous address range that
// was mapped to. In other words, cuMemUnmap cannot unmap a sub-range of an
// address range mapped by cuMemCreate / cuMemMap." (cuMemUnmap) sim takes
// whole mappings that follow one another with no gap, and returns the
// first and last one's index; one call over several such mappings is a
// guess (the conformance row "vmm unmap two mappings" logs what a GPU
// answers).
func checkUnmap(r *vaRange, p uintptr, size int64) (first, last int, err error) {
	if r == nil {
		return 0, 0, fmt.Errorf("the range is not inside one reservation: %w", driver.ErrInvalidValue)
	}
	return wholeMappings(r, int64(p-r.start), size)
}

// checkSetAccess: "The range must be a fully mapped address range
// containing all allocations created by cuMemMap / cuMemCreate."
// (cuMemSetAccess) sim asks for whole mappings (a guess: the driver may
// set access on a part of one).
func checkSetAccess(r *vaRange, p uintptr, size int64) (first, last int, err error) {
	if r == nil {
		return 0, 0, fmt.Errorf("the range is not inside one reservation: %w", driver.ErrInvalidValue)
	}
	return wholeMappings(r, int64(p-r.start), size)
}

// wholeMappings returns the indexes of the first and last mapping of r
// that exactly tile [off, off+size), with no gap.
func wholeMappings(r *vaRange, off, size int64) (first, last int, err error) {
	first = -1
	at := off
	for i, m := range r.maps {
		if m.off+m.size <= off {
			continue
		}
		if m.off >= off+size {
			break
		}
		if m.off != at {
			break
		}
		if first < 0 {
			first = i
		}
		last, at = i, m.off+m.size
	}
	if size <= 0 || first < 0 || at != off+size {
		return 0, 0, fmt.Errorf("[+%d, +%d) of the reservation is not whole mappings with no gap: %w", off, off+size, driver.ErrInvalidValue)
	}
	return first, last, nil
}
