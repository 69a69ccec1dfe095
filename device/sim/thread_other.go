//go:build !linux

package sim

// osThreadID is 0 where the OS thread's id is not read (sim's build for
// macOS): every thread then shares one per-thread default stream in the
// stream checker's order, so a race between two threads' default streams
// goes unreported there; on Linux each thread has its own.
func osThreadID() int { return 0 }
