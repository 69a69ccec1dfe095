package sim

import (
	"math/bits"
	"runtime"
	"sync"
	"syscall"
	"time"
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

// stageHtoD stages pageable src, on a stream that has passed its earlier
// work, into a staging buffer and queues the copy of the staged bytes, as
// a driver copies pageable memory: "The function will return once the
// pageable buffer has been copied to the staging memory for DMA transfer
// to device memory, but the DMA to final destination may not have
// completed" (the Driver API's "API synchronization behavior").
//
// The copy begins on the stream, in its model (streamClock), when the
// staging began: a driver stages in pieces and its DMA engine moves each
// while it stages the next, so the copy is done about one copy's time
// after the staging began, not two (a guess at the driver's pipeline,
// which the CUDA documentation does not describe). Events recorded
// around the copy then time it as a synchronous copy of the same bytes
// takes, not that and the staging.
//
// Staging buffers are reused, and lie outside the Go heap
// (stagingBuffer): a fresh one for each copy cost its allocation and
// page faults, more than the copy (16 MiB: 12 ms against 1 ms), and in
// the Go heap the race detector's checks of the two copies through it.
func (s *stream) stageHtoD(pt bool, dst devarray.Ptr, src []byte) error {
	began := time.Now()
	buf := stagingBuffer(len(src))
	staged := buf.mem[:len(src)]
	copy(staged, src)
	if err := s.checkHtoD(pt, dst, staged); err != nil {
		releaseStaging(buf)
		return err
	}
	err := s.push(streamOp{due: s.d.due(), began: began, run: func() error {
		defer releaseStaging(buf)
		return s.d.copyOn(s, "async copy HtoD", s.d.htod(dst, staged))
	}})
	if err != nil {
		releaseStaging(buf)
	}
	return err
}

// stagingBuf is a staging buffer of a pageable copy: 2^class bytes mapped
// outside the Go heap (where the mapping failed, in it), unmapped once the
// garbage collector drops the stagingBuf.
type stagingBuf struct {
	mem   []byte
	class int
}

// stagingPools hold the free staging buffers by size class. A sync.Pool
// gives them back to the system when copies stop: the garbage collector
// drops what its pools hold, and a dropped buffer's cleanup unmaps it.
var stagingPools [bits.UintSize]sync.Pool

// stagingBuffer returns a staging buffer of at least n bytes (n > 0),
// reused where one of its size class is free: releaseStaging gives it
// back. A mapping's untouched pages take no memory, so rounding n up to a
// power of two costs address space only.
func stagingBuffer(n int) *stagingBuf {
	k := max(bits.Len(uint(n-1)), 12)
	if b, ok := stagingPools[k].Get().(*stagingBuf); ok {
		return b
	}
	b := &stagingBuf{class: k}
	mem, err := syscall.Mmap(-1, 0, 1<<k, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		b.mem = make([]byte, 1<<k) // in the Go heap: slower under the race detector, as correct
		return b
	}
	b.mem = mem
	runtime.AddCleanup(b, func(mem []byte) { syscall.Munmap(mem) }, mem)
	return b
}

// releaseStaging returns a buffer of stagingBuffer's once its copy has
// read it.
func releaseStaging(b *stagingBuf) { stagingPools[b.class].Put(b) }
