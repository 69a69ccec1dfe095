package main

// cuarray as another library's allocator, as RAPIDS RMM is for CuPy and
// PyTorch: their allocations come from a cuarray device, so they are in
// its ledger (counts, peaks, scopes) and under its limit.
//
//	cuarray_allocator_use(dev, flags, limit, &index)  serve the device's index from dev
//	cuarray_torch_malloc(size, device, stream)         PyTorch's CUDAPluggableAllocator pair:
//	cuarray_torch_free(ptr, size, device, stream)      NULL and a recorded error on failure
//	cuarray_allocator_malloc(size, device, stream, &p) the same, with the error returned (CuPy)
//	cuarray_allocator_free(p, size, device, stream)
//	cuarray_allocator_last_error(clear)                the calling thread's last error, or NULL
//	cuarray_allocator_stats(&json)                     the allocator's counts and its pools' stats
//
// A device index (PyTorch's device, CuPy's device id) is served by the
// device cuarray_allocator_use last named for it: its ordinal. Its flags
// say where the memory comes from: 0, the device's own allocator
// (cuMemAlloc); CUARRAY_ALLOCATOR_POOL, cuarray's caching pool over it;
// CUARRAY_ALLOCATOR_STREAM_ORDERED, the device's default stream-ordered
// pool, each malloc a cuMemAllocAsync and each free a cuMemFreeAsync on the
// stream the call names (as CuPy's MemoryAsyncPool and PyTorch's
// cudaMallocAsync backend; allocator_async.go), counted under the ledger's
// stream-ordered kind, whose limit then applies; both, the caching pool
// with its segments from the default stream-ordered pool. With the pool
// off and memory from the device's allocator, every allocation is one device allocation, counted in the
// device's ledger as it is made and checked against the ledger's limit;
// the stream is not needed (a free waits as the device's free does). With
// the pool on (package pool: one pool per device, made once), allocations
// come from the pool's cached segments, the ledger counts the segments, and
// a free is stream-ordered: the block is reusable at once on the stream it
// was freed on, and on other streams once that stream has passed the free.
// The stream a free names must be alive. The stream a block was allocated
// on may be gone by then (CuPy destroys a stream while arrays made on it
// live on): a free on another stream than the allocation's (unless the
// allocation's is a default stream) first waits for the device and then
// never touches the allocation's stream, since the driver's answer to a
// destroyed stream is undefined (on an H100, a crash). PyTorch's free (cuarray_torch_free)
// is the exception: PyTorch's pluggable allocator passes only the stream a
// block was allocated on and drops tensor.record_stream, so a side stream
// may still use the block; with the pool, cuarray_torch_free first waits
// for the device (every stream), then gives the block back, touching no
// stream but the one it names. Stream 0 is
// CUDA's legacy default stream. Stream 2, CU_STREAM_PER_THREAD, is a
// different stream on each OS thread, and the pool treats it so: a block a
// thread freed on its stream 2 is reused at once by that thread only, and
// a block freed on another thread than the one that allocated it on
// stream 2 waits for the device first (no call on the freeing thread can
// reach the allocating thread's stream). Out of memory, by the ledger's limit or the device's, a malloc
// returns NULL with cuarray's message and figures (requested, in use,
// limit, free, total) as the last error. A malloc of 0 bytes returns NULL
// without an error, as PyTorch's and CuPy's own allocators do. A free of
// NULL does nothing; a free of a pointer the allocator did not hand out
// (or freed already) is ignored with an error recorded. Every entry point
// is safe to call from many threads at once.
//
// The last error is the calling OS thread's, as errno is: a failed
// malloc or free records its message for the thread that called it
// (replacing that thread's previous one), and cuarray_allocator_last_error
// returns the calling thread's message (a copy, freed with
// cuarray_free_string) or NULL, never another thread's; clear forgets it
// for this thread only. A thread's message is freed when the thread exits.
// A success leaves the thread's last error as it was. cuarray_allocator_stats
// counts the errors of all threads (errors).

/*
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include <pthread.h>

// cuarray_allocator_use's flags.
#define CUARRAY_ALLOCATOR_POOL 1           // from cuarray's caching pool
#define CUARRAY_ALLOCATOR_STREAM_ORDERED 2 // from the device's default stream-ordered pool

// The calling OS thread, which CU_STREAM_PER_THREAD names a stream of.
static uintptr_t cuarray_thread_id(void) { return (uintptr_t)pthread_self(); }

// allocator_error.c: the calling thread's last error.
void cuarray_allocator_set_error(char *msg);
char *cuarray_allocator_get_error(int clear);
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/cuarray/cuarray/device"
)

// threadID returns the calling OS thread's identity (pthread_self).
func threadID() uintptr { return uintptr(C.cuarray_thread_id()) }

// torchMalloc is cuarray_torch_malloc in Go terms.
func torchMalloc(size int64, index int, stream uintptr) uintptr {
	p, err := allocate(size, index, stream)
	recordError(err)
	return p
}

// torchFree is cuarray_torch_free in Go terms.
func torchFree(ptr uintptr, size int64, index int, stream uintptr) {
	recordError(releaseTorch(ptr, size, index, stream))
}

//export cuarray_torch_malloc
func cuarray_torch_malloc(size C.ssize_t, device C.int, stream unsafe.Pointer) unsafe.Pointer {
	p := torchMalloc(int64(size), int(device), uintptr(stream))
	// A device address, never Go memory: handed to C as the void* it is.
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

//export cuarray_torch_free
func cuarray_torch_free(ptr unsafe.Pointer, size C.ssize_t, device C.int, stream unsafe.Pointer) {
	torchFree(uintptr(ptr), int64(size), int(device), uintptr(stream))
}

//export cuarray_allocator_use
func cuarray_allocator_use(dev C.uint64_t, flags C.int, limit C.int64_t, index *C.int) *C.char {
	if msg := null("cuarray_allocator_use", "index", unsafe.Pointer(index)); msg != nil {
		return msg
	}
	const known = C.CUARRAY_ALLOCATOR_POOL | C.CUARRAY_ALLOCATOR_STREAM_ORDERED
	if flags&^known != 0 {
		return result(fmt.Errorf("cuarray_allocator_use: flags %#x: known are CUARRAY_ALLOCATOR_POOL (1) and CUARRAY_ALLOCATOR_STREAM_ORDERED (2): %w",
			int(flags), device.ErrInvalidValue))
	}
	i, err := useAllocatorOf(uint64(dev), flags&C.CUARRAY_ALLOCATOR_POOL != 0, flags&C.CUARRAY_ALLOCATOR_STREAM_ORDERED != 0, int64(limit))
	*index = C.int(i)
	return result(err)
}

//export cuarray_allocator_malloc
func cuarray_allocator_malloc(size C.int64_t, device C.int, stream C.uintptr_t, out *C.uintptr_t) *C.char {
	if msg := null("cuarray_allocator_malloc", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	p, err := allocate(int64(size), int(device), uintptr(stream))
	*out = C.uintptr_t(p)
	recordError(err)
	return result(err)
}

//export cuarray_allocator_free
func cuarray_allocator_free(ptr C.uintptr_t, size C.int64_t, device C.int, stream C.uintptr_t) *C.char {
	err := release(uintptr(ptr), int64(size), int(device), uintptr(stream))
	recordError(err)
	return result(err)
}

//export cuarray_allocator_last_error
func cuarray_allocator_last_error(clear C.int) *C.char {
	return C.cuarray_allocator_get_error(clear)
}

// setThreadError makes msg the calling OS thread's last error. Called from
// an exported entry point, that is the C caller's thread: the Go code of a
// call from C, and the cgo calls it makes, run on the thread that called.
func setThreadError(msg string) {
	C.cuarray_allocator_set_error(C.CString(msg))
}

// threadError returns the calling OS thread's last error ("" for none),
// and forgets it when clear is set. Go code that records an error and
// reads it back must stay on one thread (runtime.LockOSThread) in between.
func threadError(clear bool) string {
	var c C.int
	if clear {
		c = 1
	}
	msg := C.cuarray_allocator_get_error(c)
	if msg == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(msg))
	return C.GoString(msg)
}

// allocatorReport is cuarray_allocator_stats's JSON.
type allocatorReport struct {
	AllocatorStats
	Pools map[int]poolReport `json:"pools"`
}

// poolReport is one pool's figures, in the ledger's snake_case.
type poolReport struct {
	InUse         int64   `json:"in_use"`
	Reserved      int64   `json:"reserved"`
	PeakInUse     int64   `json:"peak_in_use"`
	Allocs        int64   `json:"allocs"`
	Frees         int64   `json:"frees"`
	FromCache     int64   `json:"from_cache"`
	FromDevice    int64   `json:"from_device"`
	Segments      int     `json:"segments"`
	LiveBlocks    int     `json:"live_blocks"`
	PendingBlocks int     `json:"pending_blocks"`
	Fragmentation float64 `json:"fragmentation"`
}

//export cuarray_allocator_stats
func cuarray_allocator_stats(out **C.char) *C.char {
	if msg := null("cuarray_allocator_stats", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	st, pools := allocatorStats()
	r := allocatorReport{AllocatorStats: st, Pools: map[int]poolReport{}}
	for i, p := range pools {
		r.Pools[i] = poolReport{InUse: p.InUse, Reserved: p.Reserved, PeakInUse: p.PeakInUse, Allocs: p.Allocs,
			Frees: p.Frees, FromCache: p.FromCache, FromDevice: p.FromDevice, Segments: p.Segments,
			LiveBlocks: p.LiveBlocks, PendingBlocks: p.PendingBlocks, Fragmentation: p.Fragmentation}
	}
	b, err := json.Marshal(r)
	return putString(out, b, err)
}
