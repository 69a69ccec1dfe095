//go:build cuda && cudaemu && linux

package emulated

/*
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"os"
)

// A destroyed stream or event handle given to the driver is undefined
// behaviour. The H100 (driver 580.159.04, 2026-11-27) answered
// CUDA_ERROR_CONTEXT_IS_DESTROYED to cuEventRecord of a destroyed event
// (conformance TestEvents), and killed the process with SIGSEGV in
// cuEventRecord given a stream handle that CuPy had destroyed
// (python/test_gpu_alloc.py, test_frees_on_a_stream). The emulated driver
// never lets such a use pass quietly: it answers with these internal
// results, which result turns into the driver's code after recording the
// call on the list Misuses returns (and, with misuse=abort, aborting the
// process as the H100 did).
const (
	errDestroyedStream = cuResult(-1) // a destroyed stream's handle
	errDestroyedEvent  = cuResult(-2) // a destroyed event's handle
)

// misused records a use of a destroyed handle by call and returns the
// result the driver gives for it; any other result it returns as it is.
// The code for an event is what the H100 answered; for a stream, whose
// use crashed the H100, CUDA_ERROR_INVALID_HANDLE is a guess, and so is
// going on (misuse=record): conformance's TestObservations logs, in a
// child process, what a GPU does with cuEventRecord on a destroyed stream.
func misused(call string, r cuResult) cuResult {
	var what string
	switch r {
	case errDestroyedStream:
		what, r = "stream", errInvalidHandle
	case errDestroyedEvent:
		what, r = "event", errContextIsDestroyed
	default:
		return r
	}
	msg := fmt.Sprintf("%s: a destroyed %s's handle: undefined behaviour (an H100 crashed on one)", call, what)
	drv.mu.Lock()
	if len(drv.misuses) < maxFailures {
		drv.misuses = append(drv.misuses, msg)
	}
	abort := drv.cfg.abortOnMisuse
	drv.mu.Unlock()
	fmt.Fprintf(os.Stderr, "cuarray emulated driver: %s\n", msg)
	if abort {
		C.abort()
	}
	return r
}

// Misuses returns the undefined-behaviour uses of destroyed stream and
// event handles so far, oldest first (at most the first 4096): each is a
// bug in the program, which a GPU may punish with a crash.
func Misuses() []string {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	return append([]string(nil), drv.misuses...)
}

// destroyedStream returns errDestroyedStream when h is the handle of a
// destroyed stream not yet reused, else errInvalidHandle.
func destroyedStream(h uintptr) cuResult {
	if kind, ok := drv.destroyed(h); ok && kind == "stream" {
		return errDestroyedStream
	}
	return errInvalidHandle
}

// destroyedEvent is destroyedStream for events.
func destroyedEvent(h uintptr) cuResult {
	if kind, ok := drv.destroyed(h); ok && kind == "event" {
		return errDestroyedEvent
	}
	return errInvalidHandle
}
