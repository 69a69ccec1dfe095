//go:build cuda

package main

// Calls into the library come from the caller's threads (Python threads,
// other libraries' callbacks), and the CUDA backend makes the device's
// primary context current on the thread it runs on and leaves it there.
// Each entry point saves the thread's current context and restores it on
// the way out, so the library changes nothing a caller's thread had
// current (another context, or none). So does the deleter of a DLPack copy
// (copy=True), which frees the copy and is called from the consumer's
// thread; every other DLPack tensor is built and deleted in C with no
// driver call (keep.c), so it needs no guard.

/*
#cgo !linux LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/lib/x86_64-linux-gnu -L/usr/local/cuda/lib64
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stddef.h>
#include "../interop/dlpack.h"

static CUcontext cuarray_ctx_save(CUresult *r) {
	CUcontext c = NULL;
	*r = cuCtxGetCurrent(&c);
	return c;
}

static void cuarray_ctx_restore(CUcontext saved) {
	CUcontext c = NULL;
	if (cuCtxGetCurrent(&c) == CUDA_SUCCESS && c != saved) {
		cuCtxSetCurrent(saved);
	}
}

// The deleters interop puts in its tensors (the same two functions for
// every tensor), kept on first use; the guarded ones call them between a
// save and a restore of the calling thread's context.
static void (*cuarray_deleter_versioned)(DLManagedTensorVersioned *);
static void (*cuarray_deleter_legacy)(DLManagedTensor *);

static void cuarray_guarded_versioned(DLManagedTensorVersioned *t) {
	CUresult r;
	CUcontext saved = cuarray_ctx_save(&r);
	__atomic_load_n(&cuarray_deleter_versioned, __ATOMIC_ACQUIRE)(t);
	if (r == CUDA_SUCCESS) {
		cuarray_ctx_restore(saved);
	}
}

static void cuarray_guarded_legacy(DLManagedTensor *t) {
	CUresult r;
	CUcontext saved = cuarray_ctx_save(&r);
	__atomic_load_n(&cuarray_deleter_legacy, __ATOMIC_ACQUIRE)(t);
	if (r == CUDA_SUCCESS) {
		cuarray_ctx_restore(saved);
	}
}

static void cuarray_guard_deleter(void *p, int versioned) {
	if (versioned) {
		DLManagedTensorVersioned *t = p;
		if (t->deleter != NULL && t->deleter != cuarray_guarded_versioned) {
			__atomic_store_n(&cuarray_deleter_versioned, t->deleter, __ATOMIC_RELEASE);
			t->deleter = cuarray_guarded_versioned;
		}
	} else {
		DLManagedTensor *t = p;
		if (t->deleter != NULL && t->deleter != cuarray_guarded_legacy) {
			__atomic_store_n(&cuarray_deleter_legacy, t->deleter, __ATOMIC_RELEASE);
			t->deleter = cuarray_guarded_legacy;
		}
	}
}
*/
import "C"

import (
	"unsafe"

	"github.com/cuarray/cuarray/device/cuda"
)

// savedContext is a thread's current CUDA context, as it was on entry.
type savedContext struct {
	ctx C.CUcontext
	ok  bool
}

// saveContext returns the calling thread's current CUDA context. A cgo
// call from C runs on the caller's thread until it returns, so the
// restore in the same call's defer runs there too.
//
// Until the driver is started in this library (cuda.Init), every driver
// call through gorgonia.org/cu's stubs answers CUDA_ERROR_NOT_INITIALIZED,
// even where another library (CuPy, PyTorch) has started it and has a
// context current on this thread: the first entry point, the one that
// starts the driver, would save nothing and leave the device's primary
// context current. So saveContext starts the driver first when it has to.
// Where it cannot start (no driver, no GPU), nothing in this call can make
// a context current either.
func saveContext() savedContext {
	var r C.CUresult
	c := C.cuarray_ctx_save(&r)
	if r == C.CUDA_ERROR_NOT_INITIALIZED && cuda.Init() == nil {
		c = C.cuarray_ctx_save(&r)
	}
	return savedContext{ctx: c, ok: r == C.CUDA_SUCCESS}
}

// restore makes the saved context current again on the calling thread, if
// a driver call changed it.
func (s savedContext) restore() {
	if s.ok {
		C.cuarray_ctx_restore(s.ctx)
	}
}

// guardDeleter replaces the deleter of a tensor the library exported with
// one that restores the calling thread's context around it.
func guardDeleter(t unsafe.Pointer, versioned bool) {
	v := C.int(0)
	if versioned {
		v = 1
	}
	C.cuarray_guard_deleter(t, v)
}
