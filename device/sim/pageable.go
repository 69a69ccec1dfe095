package sim

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
)

// A stream's copies with pageable host memory (a Go slice that is not
// page-locked) behave as on a GPU, which copies pageable memory through a
// staging buffer of its driver's (the Driver API's "API synchronization
// behavior" page; an H100, driver 580.159.04, 2026-11-27, waited so):
//
//   - into pageable memory the call returns only once the copy is
//     complete, 2-D and 3-D copies too ("for transfers from device memory
//     to pageable host memory, the function will return only once the
//     copy has completed");
//   - from pageable memory it first waits for the stream's earlier work,
//     then stages the bytes and returns (the page's "may be synchronous",
//     read strictly);
//   - host memory partly page-locked is refused with a
//     *driver.PartlyLockedError (driver.ErrPartlyLocked, a case of
//     driver.ErrInvalidValue), as every cuMemcpy page says it is
//     ("Memory regions spanning over allocations that are both registered
//     and not registered with CUDA are not supported and will return
//     CUDA_ERROR_INVALID_VALUE").
//
// Config.PageableAsync turns the waits off (the emulated CUDA driver
// applies the driver's rules itself, on top of sim's streams).

// pageable reports whether host memory b of a copy is pageable: false when
// one page-locked range holds all of it, a *driver.PartlyLockedError when
// it is partly page-locked.
func (d *Device) pageable(op string, b []byte) (bool, error) {
	if len(b) == 0 {
		return false, nil
	}
	addr, n := uintptr(unsafe.Pointer(unsafe.SliceData(b))), int64(len(b))
	d.mu.RLock()
	defer d.mu.RUnlock()
	if _, ok := d.host.Containing(addr, n); ok {
		return false, nil
	}
	if err := d.host.CheckCopy("sim: "+op, b); err != nil {
		return false, err
	}
	return !d.cfg.PageableAsync, nil
}

// pageableSides returns whether a pitched copy reads pageable memory (from)
// or writes it (to), or an error for a side partly page-locked.
func (d *Device) pageableSides(op string, p devarray.Memcpy3D) (from, to bool, err error) {
	if from, err = d.pageable(op, p.Src.Host); err != nil {
		return false, false, err
	}
	to, err = d.pageable(op, p.Dst.Host)
	return from, to, err
}
