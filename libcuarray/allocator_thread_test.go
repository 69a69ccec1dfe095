//go:build cgo

package main

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// onOneThread locks the calling goroutine to its OS thread, whose last
// error the allocator's calls record and lastError reads, and forgets
// that thread's last error; what it returns forgets it again and unlocks.
// A goroutine that moved between threads would read another thread's
// message, as a C caller never does.
func onOneThread() func() {
	runtime.LockOSThread()
	lastError(true)
	return func() {
		lastError(true)
		runtime.UnlockOSThread()
	}
}

// threadFailure is one thread's own failing allocator call and the text
// only its message has.
type threadFailure struct {
	call func()
	want string
}

// distinctFailures returns n failing calls on the device index, each with
// a message of its own: half are mallocs past the limit, each of a size no
// other asks for; half are frees of a pointer nobody allocated, each a
// different odd address (the allocator hands out 256-byte granules, so an
// odd address is never live).
func distinctFailures(n int, index int, limit int64) []threadFailure {
	sizes, ptrs := map[int64]bool{}, map[uintptr]bool{}
	out := make([]threadFailure, n)
	for i := range out {
		if i%2 == 0 {
			size := limit + 1 + rand.Int64N(1<<30)
			for sizes[size] {
				size = limit + 1 + rand.Int64N(1<<30)
			}
			sizes[size] = true
			out[i] = threadFailure{func() { torchMalloc(size, index, 0) }, fmt.Sprintf("malloc %d bytes", size)}
			continue
		}
		ptr := uintptr(rand.Uint64()) | 1
		for ptrs[ptr] {
			ptr = uintptr(rand.Uint64()) | 1
		}
		ptrs[ptr] = true
		size := rand.Int64N(1 << 20)
		out[i] = threadFailure{func() { torchFree(ptr, size, index, 0) }, fmt.Sprintf("free %#x (%d bytes", ptr, size)}
	}
	return out
}

// Threads that fail at once each read their own failure's message, as
// with errno: N goroutines, each locked to its OS thread, make their own
// failing call (a malloc past the limit of a size of its own, a free of a
// bogus pointer of its own), wait until all have failed, then read the
// last error. With one last error per process every thread but one would
// read another's message. Clearing forgets a thread's message only: the
// threads that did not clear still read theirs. The errors count is the
// process's: every failure is counted.
func TestAllocatorLastErrorPerThread(t *testing.T) {
	defer onOneThread()()
	for _, tc := range []struct {
		name    string
		ordinal int
		pool    bool
	}{
		{"device", 36, false},
		{"pool", 37, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := int64(8<<20) + rand.Int64N(8<<20)
			d, index := allocatorDevice(t, tc.ordinal, tc.pool, limit)
			defer func() { require.NoError(t, d.Ledger().SetLimit(accounting.Device, 0)) }()
			const threads = 16
			failures := distinctFailures(threads, index, limit)
			before, _ := allocatorStats()

			var failed, cleared, done sync.WaitGroup
			failed.Add(threads)
			cleared.Add(threads)
			// Each thread's reads: once all have failed; once a quarter have
			// cleared theirs; after a malloc that succeeds; after a free of
			// that block given the wrong size (an error of its own).
			got := make([][4]string, threads)
			for i, f := range failures {
				done.Add(1)
				go func() {
					defer done.Done()
					defer onOneThread()()
					f.call()
					failed.Done()
					failed.Wait() // every thread has recorded its error
					got[i][0] = lastError(i%4 == 0)
					cleared.Done()
					cleared.Wait() // the clearing threads have cleared
					got[i][1] = lastError(false)
					p := torchMalloc(1+rand.Int64N(64<<10), index, 0)
					got[i][2] = lastError(false)
					torchFree(p, -1, index, 0)
					got[i][3] = lastError(true)
				}()
			}
			done.Wait()
			for i, f := range failures {
				assert.Contains(t, got[i][0], f.want, "thread %d reads its own failure's message", i)
				if i%4 == 0 {
					assert.Empty(t, got[i][1], "thread %d cleared its message", i)
					assert.Empty(t, got[i][2], "thread %d: a malloc that succeeds records nothing", i)
				} else {
					assert.Contains(t, got[i][1], f.want, "thread %d: the other threads' clears left its message", i)
					assert.Contains(t, got[i][2], f.want, "thread %d: a malloc that succeeds leaves its message", i)
				}
				assert.Contains(t, got[i][3], "given -1 bytes", "thread %d: its wrong free's message replaced the last", i)
			}
			after, _ := allocatorStats()
			assert.Equal(t, int64(2*threads), after.Errors-before.Errors, "each thread's failure and its wrong free counted once")
			settleAllocator(t, d)
			assert.Zero(t, d.Ledger().Current(accounting.Device), "the device is back to zero")
		})
	}
}

// A thread that records many errors holds one message, the last: each
// replaces (and frees) the one before, and reading it with clear leaves
// none.
func TestAllocatorLastErrorReplaced(t *testing.T) {
	defer onOneThread()()
	_, index := allocatorDevice(t, 38, false, 0)
	var want string
	for range 200 + rand.IntN(200) {
		ptr := uintptr(rand.Uint64()) | 1
		torchFree(ptr, 64, index, 0)
		want = fmt.Sprintf("free %#x (64 bytes", ptr)
	}
	assert.Contains(t, lastError(false), want, "the last error is the last free's")
	assert.Contains(t, lastError(true), want, "read twice: it stays until cleared")
	assert.Empty(t, lastError(false), "cleared")
}
