//go:build linux

package sim

import "syscall"

// osThreadID is the calling OS thread's id: the per-thread default stream
// is one per OS thread, as CUDA's is.
func osThreadID() int { return syscall.Gettid() }
