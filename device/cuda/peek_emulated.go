//go:build cuda && cudaemu && linux

package cuda

import (
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// peekState is what Peek reads device memory through on the emulated
// driver, as on a GPU (peek_driver.go): a page-locked buffer
// (cuMemHostAlloc), made on the first Peek and kept until Close. Not
// pageable memory: the emulated driver's Peek into pageable memory waits
// while a host function of the context runs, as a GPU's copy into
// pageable memory does (the H100, driver 580.159.04, 2026-11-27: a peek
// into a Go slice never returned while kernels'
// TestAsyncKernelsReturnBeforeTheWorkIsDone held a stream), so a peek
// through a Go slice hangs here too.
type peekState struct {
	mu    sync.Mutex
	stage unsafe.Pointer
}

// peek copies len(b) bytes of device memory at p into b through the
// page-locked buffer, on a thread where the context is current (inside
// Device.call). The emulated driver reads the memory as it is now without
// queueing device work (emulated.Peek), as a GPU's copy on a non-blocking
// stream of its own reads it, so its stream race checker (check=streams)
// does not take this look, which a test makes while a held stream still
// has work queued, for a racing read.
func (ps *peekState) peek(b []byte, p devarray.Ptr) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.stage == nil {
		stage, c := memHostAlloc(peekStage, 0)
		if err := check(c); err != nil {
			return err
		}
		ps.stage = stage
	}
	stage := unsafe.Slice((*byte)(ps.stage), peekStage)
	for off := 0; off < len(b); off += peekStage {
		k := min(len(b)-off, peekStage)
		if err := check(emulated.Peek(stage[:k], uintptr(p)+uintptr(off))); err != nil {
			return err
		}
		copy(b[off:off+k], stage[:k])
	}
	return nil
}

// release frees the page-locked buffer, on a thread where the context is
// current (at Close).
func (ps *peekState) release() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.stage == nil {
		return nil
	}
	err := check(memFreeHost(ps.stage))
	ps.stage = nil
	return err
}
