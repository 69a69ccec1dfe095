//go:build cuda

package cuda

// This file holds the copy contract on a GPU: the driver's "synchronous"
// cuMemcpyDtoD, cuMemsetD8, cuMemcpyPeer and copies from pageable memory
// return once their work is queued, so the backend waits for the default
// stream before such a call returns (see driver.Device).

/*
#cgo !linux LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/lib/x86_64-linux-gnu -L/usr/local/cuda/lib64
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>

// With CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc --default-stream per-thread, or CGO_CFLAGS)
// cuda.h binds every call without a stream, and stream 0, to the calling thread's per-thread
// default stream: settle would wait on the legacy stream for work that is not on it, and the
// streams the backend makes would no longer order with its synchronous calls.
#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "cuarray's CUDA backend runs its synchronous calls on the legacy default stream and waits for that stream: build it without CUDA_API_PER_THREAD_DEFAULT_STREAM (a per-thread stream is handle 2 of Device.ExternalStream)"
#endif

static CUresult cuarray_sync_legacy(void) { return cuStreamSynchronize(CU_STREAM_LEGACY); }

*/
import "C"

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// settle waits, on a thread where the context is current (inside
// Device.call), for the work queued so far on the legacy default stream,
// which the driver's synchronous calls use.
func settle() error { return check(code(C.cuarray_sync_legacy())) }

// peekStage is the size of the page-locked buffer Peek reads through.
const peekStage = 1 << 20

// Peek returns a copy of n bytes of device memory at p as they are now,
// read on a non-blocking stream that waits for no other work, into
// page-locked memory (peekState): tests
// use it to check that a synchronous call's result is there the moment it
// returns.
func (d *Device) Peek(p devarray.Ptr, n int64) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: peek %d bytes: %w", n, driver.ErrInvalidValue)
	}
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	err := d.call(func() error { return d.peeks.peek(b, p) })
	if err != nil {
		return nil, fmt.Errorf("cuda: peek %d bytes at %v: %w", n, p, err)
	}
	return b, nil
}
