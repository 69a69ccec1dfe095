//go:build cuda

package conformance

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdlib.h>

// conf_marker is what a marking host function writes: that it ran.
typedef struct { int ran; } conf_marker;

static void CUDA_CB conf_mark_fn(void *p) { __atomic_store_n(&((conf_marker *)p)->ran, 1, __ATOMIC_SEQ_CST); }

static CUresult conf_mark(CUstream s, conf_marker *m) { return cuLaunchHostFunc(s, conf_mark_fn, m); }

// conf_inside is what a host function that calls the driver saw. It never
// frees what it allocates there: cuMemFree synchronizes the context, whose
// stream is running this very function.
typedef struct { int ctxGetCurrent, streamQuery, memAlloc, ran; CUdeviceptr p; } conf_inside;

static void CUDA_CB conf_inside_fn(void *v) {
	conf_inside *r = v;
	CUcontext c;
	r->ctxGetCurrent = cuCtxGetCurrent(&c);
	r->streamQuery = cuStreamQuery(CU_STREAM_LEGACY);
	r->memAlloc = cuMemAlloc(&r->p, 256);
	__atomic_store_n(&r->ran, 1, __ATOMIC_SEQ_CST);
}

static CUresult conf_call_inside(CUstream s, conf_inside *r) { return cuLaunchHostFunc(s, conf_inside_fn, r); }

static int conf_ran(int *ran) { return __atomic_load_n(ran, __ATOMIC_SEQ_CST); }
*/
import "C"

import "unsafe"

// Marker is a host function queued on a stream that records that it ran.
type Marker struct{ m *C.conf_marker }

// NewMarker queues a marking host function on stream s.
func NewMarker(s uintptr) (Marker, int) {
	m := (*C.conf_marker)(C.calloc(1, C.size_t(unsafe.Sizeof(C.conf_marker{}))))
	return Marker{m}, r(C.conf_mark(stream(s), m))
}

// Ran reports whether the host function has run.
func (m Marker) Ran() bool { return C.conf_ran(&m.m.ran) != 0 }

// Free frees the marker's memory once its function has run (or never will).
func (m Marker) Free() { C.free(unsafe.Pointer(m.m)) }

// Inside is a host function queued on a stream that calls the driver:
// cuCtxGetCurrent, cuStreamQuery of the legacy stream and cuMemAlloc.
type Inside struct{ r *C.conf_inside }

// CallInside queues the host function on stream s.
func CallInside(s uintptr) (Inside, int) {
	in := (*C.conf_inside)(C.calloc(1, C.size_t(unsafe.Sizeof(C.conf_inside{}))))
	return Inside{in}, r(C.conf_call_inside(stream(s), in))
}

// Ran reports whether the host function has run.
func (in Inside) Ran() bool { return C.conf_ran(&in.r.ran) != 0 }

// Results returns what its three calls returned, and the memory cuMemAlloc
// gave (0 if none), for the caller to free from outside.
func (in Inside) Results() (ctxGetCurrent, streamQuery, memAlloc int, p uintptr) {
	return int(in.r.ctxGetCurrent), int(in.r.streamQuery), int(in.r.memAlloc), uintptr(in.r.p)
}

// Free frees its memory once it has run.
func (in Inside) Free() { C.free(unsafe.Pointer(in.r)) }
