//go:build cuda && cudaemu && linux

package emulated

import (
	"sync"
	"syscall"
)

// hostWorker runs a context's host functions (cuLaunchHostFunc) as the
// driver does: on one thread of its own, one at a time, in the order they
// become ready, whatever their streams. While one runs:
//
//   - A copy to or from pageable memory in the same context waits for it
//     to return (see waitHostFuncs). This is inferred, not documented: on
//     the H100 (driver 580.159.04, 2026-11-27) a cuMemcpyDtoHAsync into
//     pageable memory on a new non-blocking stream never returned while a
//     host function held another stream (kernels'
//     TestAsyncKernelsReturnBeforeTheWorkIsDone, in cuarray_peek). The
//     option pageable-waits-hostfn=false turns it off.
//   - A CUDA call from inside the host function returns
//     CUDA_ERROR_NOT_PERMITTED: cuLaunchHostFunc's page says "The host
//     function must not make any CUDA API calls. Attempting to use a CUDA
//     API may result in CUDA_ERROR_NOT_PERMITTED, but this is not
//     required" (the strict reading: it always does).
type hostWorker struct {
	mu sync.Mutex // held while one of the context's host functions runs
}

// hostThreads holds the OS threads running a host function, of any
// context: OS thread id → struct{}.
var hostThreads sync.Map

// runHostFunc runs fn as the context's host function worker does.
func (c *context) runHostFunc(fn func()) {
	c.host.mu.Lock()
	defer c.host.mu.Unlock()
	tid := syscall.Gettid()
	hostThreads.Store(tid, struct{}{})
	defer hostThreads.Delete(tid)
	fn()
}

// inHostFunc reports whether the calling OS thread is running a host
// function: then every driver call it makes is CUDA_ERROR_NOT_PERMITTED.
func inHostFunc() bool {
	_, ok := hostThreads.Load(syscall.Gettid())
	return ok
}

// waitHostFuncs waits until no host function of the context runs, before a
// copy from or to pageable memory.
func (c *context) waitHostFuncs() {
	if !drv.cfg.pageableWaitsHostFn {
		return
	}
	c.host.mu.Lock()
	c.host.mu.Unlock() //nolint:staticcheck // an empty critical section: wait for the running host function
}
