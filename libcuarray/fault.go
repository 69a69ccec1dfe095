//go:build cgo

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/cuarray/cuarray/devarray"
)

// A function that reads or writes host memory another library owns (an
// import with no device, checked at the import: bounds.go) defers both
//
//	defer faultGuard()()
//	defer faultRecover(&err, "copy", a)
//
// so that a memory fault there (the memory was unmapped or protected after
// the import) is an error instead of a crash of the calling process. It
// covers what runs on the calling goroutine only, not a device's stream
// goroutines.

// faultGuard makes a memory fault on the calling goroutine a panic that
// faultRecover turns into an error, and returns what restores the
// goroutine's setting.
func faultGuard() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// faultRecover, deferred directly, turns a recovered memory fault (or any
// other panic: none may reach C) into *err; what and a say what was done.
func faultRecover(err *error, what string, a *devarray.DevArray) {
	r := recover()
	if r == nil {
		return
	}
	if f, ok := r.(interface{ Addr() uintptr }); ok {
		*err = fmt.Errorf("%s %v: memory fault at %#x: the host memory is no longer mapped with the access it was imported with: %w",
			what, a, f.Addr(), devarray.ErrBounds)
		return
	}
	if e, ok := r.(runtime.Error); ok {
		*err = fmt.Errorf("%s %v: %v: %w", what, a, e, devarray.ErrBounds)
		return
	}
	*err = fmt.Errorf("%s %v: %v", what, a, r)
}
