//go:build cuda

package cuda_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda"
	"github.com/cuarray/cuarray/internal/testdev"
)

// notWaiting is how long a call may take while an unrelated stream is
// held before the test counts it as waiting for that stream.
const notWaiting = 5 * time.Second

// openTwo opens GPUs 0 and 1, or skips without two.
func openTwo(t *testing.T) [2]*cuda.Device {
	t.Helper()
	n, err := cuda.NumDevices()
	if err != nil || n < 2 {
		t.Skipf("needs two GPUs (the emulated driver: devices=2): %d, %v", n, err)
	}
	var devs [2]*cuda.Device
	for i := range devs {
		d, err := cuda.Open(i)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		devs[i] = d
	}
	return devs
}

// within runs f and fails the test, after calling release, when f has not
// returned within notWaiting: f waited for what release lets go.
func within(t *testing.T, what string, release func(), f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(notWaiting):
		release()
		t.Fatalf("%s did not return within %v while an unrelated stream was held: it waited for that stream (returned after the release: %v)", what, notWaiting, <-done)
	}
}

// CopyPeer waits for the work queued on the two GPUs' legacy default
// streams, as the synchronous calls do, and for nothing else: not for a
// stream of either GPU held by a host function, which cuMemcpyPeer ("serialized
// with respect to all pending and future asynchronous work" of both) would
// wait for.
func TestCopyPeerDoesNotWaitForOtherStreams(t *testing.T) {
	devs := openTwo(t)
	for _, held := range []int{0, 1} {
		t.Run(fmt.Sprintf("a stream of cuda:%d held", held), func(t *testing.T) {
			const n = 1<<16 + 12
			src, err := devs[0].Malloc(n)
			require.NoError(t, err)
			defer devs[0].Free(src)
			dst, err := devs[1].Malloc(n)
			require.NoError(t, err)
			defer devs[1].Free(dst)
			want := testdev.RandomBytes(n)
			require.NoError(t, devs[0].CopyHtoD(src, want))
			require.NoError(t, devs[1].Memset(dst, 0, n))

			s, err := devs[held].NewStream()
			require.NoError(t, err)
			defer s.Close()
			resume := testdev.HoldReached(t, s)
			within(t, "CopyPeer", resume, func() error { return devs[0].CopyPeer(dst, devs[1], src, n) })
			resume()

			got := make([]byte, n)
			require.NoError(t, devs[1].CopyDtoH(got, dst))
			assert.Equal(t, want, got, "the bytes arrived")
		})
	}
}

// A stream waits for an event of another GPU: "h_event may be from a
// different context or device than h_stream" (cuStreamWaitEvent). Work
// queued on cuda:1 behind an event recorded on a held stream of cuda:0
// waits until the hold is let go, then runs.
func TestWaitEventAcrossDevices(t *testing.T) {
	devs := openTwo(t)
	const n = 4096
	p, err := devs[1].Malloc(n)
	require.NoError(t, err)
	defer devs[1].Free(p)
	require.NoError(t, devs[1].Memset(p, 0, n))
	fill := testdev.RandomBytes(1)[0] | 1

	a, err := devs[0].NewStream()
	require.NoError(t, err)
	defer a.Close()
	b, err := devs[1].NewStream()
	require.NoError(t, err)
	defer b.Close()
	e0, err := devs[0].NewEvent()
	require.NoError(t, err)
	defer e0.Close()
	e1, err := devs[1].NewEvent()
	require.NoError(t, err)
	defer e1.Close()

	resume := testdev.HoldReached(t, a)
	require.NoError(t, a.Record(e0))
	require.NoError(t, b.WaitEvent(e0), "a stream of cuda:1 waits for an event of cuda:0")
	require.NoError(t, b.MemsetAsync(p, fill, n))
	require.NoError(t, b.Record(e1))
	time.Sleep(50 * time.Millisecond)
	done, err := e1.Query()
	require.NoError(t, err)
	assert.False(t, done, "the memset on cuda:1 waits for cuda:0's held stream")
	resume()
	require.NoError(t, e1.Synchronize())
	got := make([]byte, n)
	require.NoError(t, devs[1].CopyDtoH(got, p))
	assert.Equal(t, fill, got[0], "the memset ran once the event completed")
	assert.Equal(t, fill, got[n-1])
}
