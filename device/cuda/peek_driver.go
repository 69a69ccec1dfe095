//go:build cuda && !(cudaemu && linux)

package cuda

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <string.h>

// cuarray_peek copies n bytes of device memory at src to dst through the
// page-locked buffer stage of size bytes, on the non-blocking stream s,
// which waits for no other stream: what the memory holds right now.
static CUresult cuarray_peek(void *dst, CUdeviceptr src, size_t n, void *stage, size_t size, CUstream s)
{
	for (size_t off = 0; off < n; off += size) {
		size_t k = n - off < size ? n - off : size;
		CUresult r = cuMemcpyDtoHAsync(stage, src + off, k, s);
		if (r == CUDA_SUCCESS) r = cuStreamSynchronize(s);
		if (r != CUDA_SUCCESS) return r;
		memcpy((char *)dst + off, stage, k);
	}
	return CUDA_SUCCESS;
}
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
)

// peekState is what Peek reads device memory through: a non-blocking
// stream and a page-locked buffer, made on the first Peek and kept until
// Close. Not pageable memory: a copy into pageable memory returns only
// once complete and waits while any host function of the context runs,
// so on the H100 (driver 580.159.04, 2026-11-27) a peek into a Go slice
// never returned while a test held another stream with a host function.
// Kept, not made per call: cuMemFreeHost synchronizes the context, which
// waits for a held stream.
type peekState struct {
	mu     sync.Mutex
	stage  unsafe.Pointer
	stream C.CUstream
}

// peek copies len(b) bytes of device memory at p into b, on a thread where
// the context is current (inside Device.call).
func (ps *peekState) peek(b []byte, p devarray.Ptr) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.stage == nil {
		if err := check(code(C.cuStreamCreate(&ps.stream, C.CU_STREAM_NON_BLOCKING))); err != nil {
			return err
		}
		if err := check(code(C.cuMemHostAlloc(&ps.stage, peekStage, 0))); err != nil {
			C.cuStreamDestroy(ps.stream)
			ps.stage = nil
			return err
		}
	}
	return check(code(C.cuarray_peek(unsafe.Pointer(&b[0]), C.CUdeviceptr(p), C.size_t(len(b)), ps.stage, peekStage, ps.stream)))
}

// release frees the stream and buffer, on a thread where the context is
// current (at Close).
func (ps *peekState) release() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.stage == nil {
		return nil
	}
	err := check(code(C.cuMemFreeHost(ps.stage)))
	if e := check(code(C.cuStreamDestroy(ps.stream))); err == nil {
		err = e
	}
	ps.stage = nil
	return err
}
