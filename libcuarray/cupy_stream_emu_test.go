//go:build cuda && cudaemu && linux

package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/cuda/conformance"
	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// CuPy's pattern on cuarray's pool allocator: arrays made on a stream of
// CuPy's own, the stream destroyed, the arrays freed afterwards on the
// current (default) stream. On an H100 the free recorded an event on the
// destroyed stream and the process died of SIGSEGV in cuEventRecord
// (python/test_gpu_alloc.py, test_frees_on_a_stream). The emulated driver
// records such a use as undefined behaviour and reuses the destroyed
// stream's handle for the next stream, as the driver reuses addresses; the
// allocator must touch neither.
func TestAllocatorFreeAfterCuPysStreamIsDestroyed(t *testing.T) {
	defer onOneThread()()
	h, err := openDevice("cuda:0")
	require.NoError(t, err)
	d, err := deviceOf(h)
	require.NoError(t, err)
	index, err := useAllocator(h, true, 0)
	require.NoError(t, err)
	ctx, c := conformance.PrimaryRetain(0)
	require.Equal(t, conformance.Success, c, "cuDevicePrimaryCtxRetain")
	defer conformance.PrimaryRelease(0)
	misuses := len(emulated.Misuses())

	for _, tc := range []struct {
		name    string
		freeOn  func(destroyed uintptr) uintptr // the stream the frees name
		restart bool                            // a new stream is made after the destroy
	}{
		{"freed on the default stream", func(uintptr) uintptr { return 0 }, false},
		{"freed on a new stream that took the destroyed one's handle", func(h uintptr) uintptr { return h }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer onOneThread()() // CuPy's thread, its context current
			require.Equal(t, conformance.Success, conformance.CtxSetCurrent(ctx))
			s, c := conformance.StreamCreate(conformance.StreamNonBlocking)
			require.Equal(t, conformance.Success, c, "cuStreamCreate")
			var blocks []uintptr
			var sizes []int64
			for range 20 {
				size := 1 + rand.Int64N(1<<20)
				p := cupyMalloc(size, index, s)
				require.NotZero(t, p, "malloc on CuPy's stream: %s", lastError(false))
				blocks, sizes = append(blocks, p), append(sizes, size)
			}
			require.Equal(t, conformance.Success, conformance.StreamDestroy(s), "cuStreamDestroy")
			free := tc.freeOn(s)
			if tc.restart {
				again, c := conformance.StreamCreate(conformance.StreamNonBlocking)
				require.Equal(t, conformance.Success, c, "cuStreamCreate")
				defer conformance.StreamDestroy(again)
				require.Equal(t, s, again, "the driver reuses the destroyed stream's handle")
			}
			for i, p := range blocks {
				cupyFree(p, sizes[i], index, free)
			}
			assert.Empty(t, lastError(true), "the frees succeeded")
			assert.Empty(t, emulated.Misuses()[misuses:], "no free touched the destroyed stream")
			p := cupyMalloc(sizes[0], index, free)
			require.NotZero(t, p)
			cupyFree(p, sizes[0], index, free)
		})
	}
	require.NoError(t, d.Synchronize())
	settleAllocator(t, d)
	assert.Zero(t, d.Ledger().Current(accounting.Device), "the device is back to zero")
}
