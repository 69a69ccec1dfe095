//go:build cuda && cudaemu && linux

package emulated

import (
	"runtime"
	"sync"
	"syscall"
)

// hostWorker runs the process's host functions (cuLaunchHostFunc) as the
// driver does: on one thread of its own, one at a time, in the order they
// become ready, whatever their streams and contexts. "Host functions
// without a mandated order (such as in independent streams) execute in
// undefined order and may be serialized" (cuLaunchHostFunc): one worker
// for the whole process, so that a host function that holds a stream of
// device 0 holds those of device 1 too, is the strictest reading, a guess
// (reports from Hopper say a host function blocks other streams' work).
// While one runs:
//
//   - A copy to or from pageable memory waits for it to return (see
//     waitHostFuncs). This is inferred, not documented: on the H100
//     (driver 580.159.04, 2026-11-27) a cuMemcpyDtoHAsync into pageable
//     memory on a new non-blocking stream never returned while a host
//     function held another stream (kernels'
//     TestAsyncKernelsReturnBeforeTheWorkIsDone, in cuarray_peek). The
//     option pageable-waits-hostfn=false turns it off.
//   - A CUDA call from inside the host function returns
//     CUDA_ERROR_NOT_PERMITTED: cuLaunchHostFunc's page says "The host
//     function must not make any CUDA API calls. Attempting to use a CUDA
//     API may result in CUDA_ERROR_NOT_PERMITTED, but this is not
//     required" (the strict reading: it always does).
//
// And after an error in the context the function is not called at all:
// "in contrast to cuStreamAddCallback, the function will not be called in
// the event of an error in the CUDA context" (cuLaunchHostFunc).
type hostWorker struct {
	mu sync.Mutex // held while a host function of the process runs
}

// hostFuncs is the process's host function worker.
var hostFuncs hostWorker

// hostThreads holds the OS threads running a host function, of any
// context: OS thread id → struct{}.
var hostThreads sync.Map

// runHostFunc runs fn, a host function of context c whose stream has
// reached it, as the process's host function worker does: unless the
// context has faulted. The goroutine keeps its OS thread while the thread
// is marked as a host function's: else the Go scheduler could run another
// goroutine on it, before fn or after, whose driver calls would be refused
// as the host function's.
func (c *context) runHostFunc(fn func()) {
	hostFuncs.mu.Lock()
	defer hostFuncs.mu.Unlock()
	if dev := c.active(); dev == nil || c.faulted(dev) != success {
		return // "the function will not be called in the event of an error in the CUDA context"
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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

// waitHostFuncs waits until no host function runs (of any context: the
// worker is the process's), before a copy from or to pageable memory.
func (c *context) waitHostFuncs() {
	if !drv.cfg.pageableWaitsHostFn {
		return
	}
	hostFuncs.mu.Lock()
	hostFuncs.mu.Unlock() //nolint:staticcheck // an empty critical section: wait for the running host function
}
