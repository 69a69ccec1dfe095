//go:build cgo

package main

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
)

// The allocator over the device's default stream-ordered pool, without
// cuarray's caching pool (cuarray_allocator_use with
// CUARRAY_ALLOCATOR_STREAM_ORDERED alone): what CuPy's MemoryAsyncPool and
// PyTorch's cudaMallocAsync backend do, through cuarray's ledger. A malloc
// is a cuMemAllocAsync on the stream it names (0: the legacy default
// stream), usable on that stream at once, as the library that asked uses
// it there; a free is a cuMemFreeAsync on the stream it names. A free on
// another stream than the allocation's (CuPy frees on its current stream,
// and the allocation's may be gone), of a block another thread allocated
// on its per-thread default stream, or through PyTorch's entry point
// (which drops tensor.record_stream), first waits for the device, as the
// caching pool's does (allocator_core.go's releaseBlock).

// allocateAsync allocates size bytes for t from the device's default pool
// on the stream with the given handle.
func allocateAsync(t allocTarget, size int64, stream uintptr) (uintptr, error) {
	s, err := streamFor(t.dev, stream)
	if err != nil {
		return 0, fmt.Errorf("libcuarray allocator: malloc async %d bytes on %v, stream %#x: %w", size, t.dev.DeviceID(), stream, err)
	}
	p, err := s.MallocAsync(size)
	if err != nil {
		forgetStream(t.dev, stream, err)
		return 0, fmt.Errorf("libcuarray allocator: malloc async %d bytes on %v, stream %#x: %w", size, t.dev.DeviceID(), stream, err)
	}
	return uintptr(p), nil
}

// freeAsync frees ptr, from allocateAsync, in the order of the stream with
// the given handle; with anyStream, after waiting for the device. When that
// stream cannot be had, it waits for the device and frees on the legacy
// default stream, which the memory's uses are then all before.
func freeAsync(t allocTarget, ptr uintptr, stream uintptr, anyStream bool) error {
	var errs []error
	if anyStream {
		if err := t.dev.Synchronize(); err != nil {
			errs = append(errs, fmt.Errorf("libcuarray allocator: free async %#x: wait for the device: %w", ptr, err))
		}
	}
	s, err := streamFor(t.dev, stream)
	if err != nil {
		errs = append(errs, fmt.Errorf("libcuarray allocator: free async %#x on stream %#x: %w", ptr, stream, err))
		if err := t.dev.Synchronize(); err != nil {
			errs = append(errs, err)
		}
		if s, err = streamFor(t.dev, 0); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	if err := s.FreeAsync(devarray.Ptr(ptr)); err != nil {
		forgetStream(t.dev, stream, err)
		errs = append(errs, fmt.Errorf("libcuarray allocator: free async %#x on stream %#x: %w", ptr, stream, err))
	}
	return errors.Join(errs...)
}
