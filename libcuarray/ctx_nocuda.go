//go:build !cuda && cgo

package main

import "unsafe"

// savedContext is nothing without CUDA: no driver call changes a thread's
// current context.
type savedContext struct{}

// saveContext returns the calling thread's current CUDA context.
func saveContext() savedContext { return savedContext{} }

// restore makes the saved context current again on the calling thread.
func (savedContext) restore() {}

// guardDeleter wraps the deleter of a DLPack tensor the library exported
// so that it restores the caller's context; without CUDA there is none.
func guardDeleter(unsafe.Pointer, bool) {}
