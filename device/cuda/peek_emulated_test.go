//go:build cuda && cudaemu && linux

package cuda

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/driver"
)

// peekDeadline bounds a peek that must not wait: past it the test fails,
// naming the call, instead of hanging until the binary's timeout.
const peekDeadline = 20 * time.Second

// Peek reads through page-locked memory, so it returns while a host
// function holds a stream, with the memory as it is before the work queued
// behind the hold: on the H100 (driver 580.159.04, 2026-11-27) a peek
// into a Go slice never returned there (kernels'
// TestAsyncKernelsReturnBeforeTheWorkIsDone). The emulated driver's Peek
// into pageable memory waits so too, which the control shows: it stays
// blocked until the stream is let go.
func TestPeekWhileAStreamIsHeld(t *testing.T) {
	d := open(t)
	n := 1 + rand.IntN(3<<20) // across the 1 MiB page-locked buffer's chunks
	p, err := d.Malloc(int64(n))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free(p)) }()
	want := randomBytes(n)
	require.NoError(t, d.CopyHtoD(p, want))
	s, err := d.NewStream()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	reached, resume, err := s.(driver.ReachedHolder).HoldReached()
	require.NoError(t, err)
	defer resume()
	require.NoError(t, s.MemsetAsync(p, want[0]+1, int64(n)), "queued behind the hold")
	select {
	case <-reached:
	case <-time.After(peekDeadline):
		t.Fatal("the hold's host function never started")
	}

	type peeked struct {
		b   []byte
		err error
	}
	done := make(chan peeked, 1)
	go func() {
		b, err := d.Peek(p, int64(n))
		done <- peeked{b, err}
	}()
	select {
	case got := <-done:
		require.NoError(t, got.err)
		assert.Equal(t, want, got.b, "the memory before the queued memset")
	case <-time.After(peekDeadline):
		resume()
		t.Fatalf("Peek of %d bytes did not return in %v while a host function held a stream: it reads through pageable memory", n, peekDeadline)
	}

	// The control: the emulated driver's peek into a Go slice waits for the host function.
	pageable := make(chan int, 1)
	go func() {
		b := make([]byte, n)
		_ = d.call(func() error { pageable <- emulated.Peek(b, uintptr(p)); return nil })
	}()
	select {
	case c := <-pageable:
		t.Fatalf("a peek into pageable memory returned (%d) while a host function held a stream", c)
	case <-time.After(300 * time.Millisecond):
	}
	resume()
	select {
	case c := <-pageable:
		assert.NoError(t, check(c), "the peek into pageable memory, once the stream is let go")
	case <-time.After(peekDeadline):
		t.Fatalf("a peek into pageable memory did not return in %v after the stream was let go", peekDeadline)
	}
	require.NoError(t, s.Synchronize())
	got, err := d.Peek(p, int64(n))
	require.NoError(t, err)
	for i, v := range got {
		if v != want[0]+1 {
			t.Fatalf("byte %d is %d after the memset of %d", i, v, want[0]+1)
		}
	}
}
