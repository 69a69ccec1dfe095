//go:build cuda && cudaemu && linux

package emulated

// Contexts made by cuCtxCreate, and each OS thread's stack of current
// contexts. A made context is a context as a primary one is (context.go):
// active from its creation, with a sim device of its own for its memory,
// streams and faults, until cuCtxDestroy.

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import (
	"sync"
	"syscall"
	"unsafe"
)

// apiVersion is what cuCtxGetApiVersion reports of every context: cuda.h
// gives "3010 or 3020" as examples and says a new one comes only "when
// context capabilities are changed that break binary compatibility"; 3020,
// the version of the _v2 API cuda.h binds, is a guess.
const apiVersion = 3020

// made holds the contexts made by cuCtxCreate and not destroyed, and below
// each OS thread's stack of current contexts under its current one
// (state.current holds the top).
var made = struct {
	sync.Mutex
	contexts map[*context]struct{}
	below    map[int][]*context
}{contexts: make(map[*context]struct{}), below: make(map[int][]*context)}

// madeContexts returns the contexts made by cuCtxCreate and not destroyed,
// of device d.
func madeContexts(d *device) []*context {
	made.Lock()
	defer made.Unlock()
	var out []*context
	for c := range made.contexts {
		if c.dev == d {
			out = append(out, c)
		}
	}
	return out
}

// checkContextFlags checks flags of cuCtxCreate and
// cuDevicePrimaryCtxSetFlags: "Only one of the scheduling flags can be set"
// (cuCtxCreate), and no flag cuda.h does not name.
func checkContextFlags(flags uint32) cuResult {
	if flags&^ctxFlagsMask != 0 || flags&ctxSchedMask > ctxBlockingSync || flags&ctxSchedMask == 3 {
		return errInvalidValue
	}
	return success
}

// ctxCreate is cuCtxCreate: "Creates a new CUDA context and associates it
// with the calling thread ... If a context is already current to the
// thread, it is supplanted by the newly created context and may be restored
// by a subsequent call to cuCtxPopCurrent()" (cuda.h).
func ctxCreate(flags uint32, ordinal int) (uintptr, cuResult) {
	if inHostFunc() {
		return 0, errNotPermitted
	}
	d, r := deviceOf(ordinal)
	if r != success {
		return 0, r
	}
	if r := checkContextFlags(flags); r != success {
		return 0, r
	}
	c := &context{dev: d, flags: flags}
	if r := c.retain(); r != success {
		return 0, r
	}
	c.handle = drv.newHandle(c)
	made.Lock()
	made.contexts[c] = struct{}{}
	made.Unlock()
	pushCurrent(c)
	return c.handle, success
}

// ctxDestroy is cuCtxDestroy: "The context ctx will be destroyed regardless
// of how many threads it is current to ... If ctx is current to the calling
// thread then ctx will also be popped from the current thread's context
// stack (as though cuCtxPopCurrent() were called). If ctx is current to
// other threads, then ctx will remain current to those threads, and
// attempting to access ctx from those threads will result in the error
// CUDA_ERROR_CONTEXT_IS_DESTROYED" (cuda.h). Its work is waited for and
// its memory, streams, events, modules and arrays go with it.
//
// A primary context is not destroyed this way (cuDevicePrimaryCtxRelease
// and cuDevicePrimaryCtxReset end it): CUDA_ERROR_INVALID_CONTEXT for one
// is a guess, as is the same for a handle already destroyed (the driver's
// behaviour there is undefined). After a sticky error the call returns it
// and destroys nothing, as cuStreamDestroy does (a guess: "any further CUDA
// work will return the same error").
func ctxDestroy(h uintptr) cuResult {
	if !drv.ready() {
		return errNotInitialized
	}
	if inHostFunc() {
		return errNotPermitted
	}
	if h == 0 {
		return errInvalidValue
	}
	c, ok := lookup[*context](h)
	if !ok || c == c.dev.primary {
		return errInvalidContext
	}
	if r := c.usable(); r != success {
		return r
	}
	made.Lock()
	delete(made.contexts, c)
	made.Unlock()
	drv.forget(h)
	forgetSettings(c)
	c.reset()
	if drv.currentContext() == c {
		popCurrent()
	}
	return success
}

// pushCurrent makes c the calling thread's current context, keeping the
// one current before beneath it.
func pushCurrent(c *context) {
	tid := syscall.Gettid()
	made.Lock()
	defer made.Unlock()
	if cur := drv.currentContext(); cur != nil {
		made.below[tid] = append(made.below[tid], cur)
	}
	drv.setCurrent(c)
}

// popCurrent removes the calling thread's current context, making the one
// beneath it current again (none when the stack held one), and returns it.
func popCurrent() *context {
	tid := syscall.Gettid()
	made.Lock()
	defer made.Unlock()
	top := drv.currentContext()
	stack := made.below[tid]
	if len(stack) == 0 {
		drv.setCurrent(nil)
		return top
	}
	drv.setCurrent(stack[len(stack)-1])
	if len(stack) == 1 {
		delete(made.below, tid)
	} else {
		made.below[tid] = stack[:len(stack)-1]
	}
	return top
}

// ctxPushCurrent is cuCtxPushCurrent: "Pushes the given context ctx onto
// the CPU thread's stack of current contexts. The specified context
// becomes the CPU thread's current context" (cuda.h). A NULL ctx is
// CUDA_ERROR_INVALID_VALUE, a handle that is no context
// CUDA_ERROR_INVALID_CONTEXT (both in cuda.h's list; which is which is a
// guess).
func ctxPushCurrent(h uintptr) cuResult {
	if !drv.ready() {
		return errNotInitialized
	}
	if inHostFunc() {
		return errNotPermitted
	}
	if h == 0 {
		return errInvalidValue
	}
	c, ok := lookup[*context](h)
	if !ok {
		return errInvalidContext
	}
	pushCurrent(c)
	return success
}

// ctxPopCurrent is cuCtxPopCurrent: "Pops the current CUDA context from the
// CPU thread and passes back the old context handle in *pctx ... If a
// context was current to the CPU thread before cuCtxCreate() or
// cuCtxPushCurrent() was called, this function makes that context current
// to the CPU thread again" (cuda.h). With none current it is
// CUDA_ERROR_INVALID_CONTEXT. cuda.h's list of results has no
// CUDA_ERROR_INVALID_VALUE, so a NULL pctx pops without passing the handle
// back (a guess). A destroyed context pops as any other.
func ctxPopCurrent() (uintptr, cuResult) {
	if !drv.ready() {
		return 0, errNotInitialized
	}
	if inHostFunc() {
		return 0, errNotPermitted
	}
	if drv.currentContext() == nil {
		return 0, errInvalidContext
	}
	return popCurrent().handle, success
}

// ctxGetApiVersion is cuCtxGetApiVersion: "If ctx is NULL, returns the API
// version used to create the currently bound context" (cuda.h); with none
// bound, CUDA_ERROR_INVALID_CONTEXT.
func ctxGetApiVersion(h uintptr) (uint32, cuResult) {
	if !drv.ready() {
		return 0, errNotInitialized
	}
	if inHostFunc() {
		return 0, errNotPermitted
	}
	c := drv.currentContext()
	if h != 0 {
		var ok bool
		if c, ok = lookup[*context](h); !ok {
			return 0, errInvalidContext
		}
	}
	if c == nil {
		return 0, errInvalidContext
	}
	if r := c.usable(); r != success {
		return 0, r
	}
	return apiVersion, success
}

//export cuemu_cuCtxCreate_v2
func cuemu_cuCtxCreate_v2(pctx *C.CUcontext, flags C.uint, dev C.CUdevice) C.CUresult {
	if pctx == nil {
		return result("cuCtxCreate_v2", errInvalidValue)
	}
	h, r := ctxCreate(uint32(flags), int(dev))
	if r == success {
		*pctx = C.CUcontext(cPointer(h))
	}
	return result("cuCtxCreate_v2", r)
}

//export cuemu_cuCtxDestroy_v2
func cuemu_cuCtxDestroy_v2(ctx C.CUcontext) C.CUresult {
	return result("cuCtxDestroy_v2", ctxDestroy(uintptr(unsafe.Pointer(ctx))))
}

//export cuemu_cuCtxPushCurrent_v2
func cuemu_cuCtxPushCurrent_v2(ctx C.CUcontext) C.CUresult {
	return result("cuCtxPushCurrent_v2", ctxPushCurrent(uintptr(unsafe.Pointer(ctx))))
}

//export cuemu_cuCtxPopCurrent_v2
func cuemu_cuCtxPopCurrent_v2(pctx *C.CUcontext) C.CUresult {
	h, r := ctxPopCurrent()
	if r == success && pctx != nil {
		*pctx = C.CUcontext(cPointer(h))
	}
	return result("cuCtxPopCurrent_v2", r)
}

//export cuemu_cuCtxGetApiVersion
func cuemu_cuCtxGetApiVersion(ctx C.CUcontext, version *C.uint) C.CUresult {
	if version == nil {
		return result("cuCtxGetApiVersion", errInvalidValue)
	}
	v, r := ctxGetApiVersion(uintptr(unsafe.Pointer(ctx)))
	if r == success {
		*version = C.uint(v)
	}
	return result("cuCtxGetApiVersion", r)
}
