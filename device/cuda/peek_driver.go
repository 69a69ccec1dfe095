//go:build cuda && !(cudaemu && linux)

package cuda

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>

// cuarray_peek copies device memory to the host on a stream of its own that
// does not wait for the default stream: what the memory holds right now.
static CUresult cuarray_peek(void *dst, CUdeviceptr src, size_t n)
{
	CUstream s;
	CUresult r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	if (r != CUDA_SUCCESS) return r;
	r = cuMemcpyDtoHAsync(dst, src, n, s);
	CUresult r2 = cuStreamSynchronize(s);
	cuStreamDestroy(s);
	return r != CUDA_SUCCESS ? r : r2;
}
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
)

// peek copies len(b) bytes of device memory at p into b through the
// driver, on a thread where the context is current (inside Device.call),
// and returns the driver's result code.
func peek(b []byte, p devarray.Ptr) int {
	return code(C.cuarray_peek(unsafe.Pointer(&b[0]), C.CUdeviceptr(p), C.size_t(len(b))))
}
