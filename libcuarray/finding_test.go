//go:build cgo

package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// Through the PyTorch entry points with the pool, a block a side stream
// still uses is not handed out again when PyTorch frees it. PyTorch's
// pluggable allocator has no record_stream hook that its Python API can
// set, so tensor.record_stream does nothing and the free names only the
// allocation stream; a pool that reused the block at once on that stream
// let new work overwrite what the side stream had still to read. Here the
// side stream, held by sim.Pause as by a long kernel, has a copy of the
// block queued; PyTorch frees it, allocates the same size again on the
// allocation stream and writes it. The side stream must still read the
// block's old, random contents.
func TestFinding02TorchPoolSideStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ordinal int
		size    int64
	}{
		{"a small block", 35, 1 + rand.Int64N(64<<10)},
		{"a large block", 36, 2<<20 + rand.Int64N(8<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer onOneThread()()
			d, index := allocatorDevice(t, tc.ordinal, true, 0)
			alloc, err := d.NewStream() // PyTorch's current stream when it allocated
			require.NoError(t, err)
			defer alloc.Close()
			side, err := d.NewStream() // the stream record_stream would have named
			require.NoError(t, err)
			defer side.Close()

			p := torchMalloc(tc.size, index, alloc.Handle())
			require.NotZero(t, p, lastError(false))
			data := testdev.RandomBytes(int(tc.size))
			require.NoError(t, d.CopyHtoD(devarray.Ptr(p), data))
			resume, err := sim.Pause(side)
			require.NoError(t, err)
			defer resume()
			got := testdev.PageLocked(t, d, tc.size) // queued behind the pause, not waited for
			require.NoError(t, side.CopyDtoHAsync(got, devarray.Ptr(p)), "the side stream's use of the tensor")

			// PyTorch drops the tensor, then allocates and writes a new one.
			done := make(chan error, 1)
			go func() {
				defer onOneThread()()
				torchFree(p, tc.size, index, alloc.Handle())
				q := torchMalloc(tc.size, index, alloc.Handle())
				if q == 0 {
					done <- assert.AnError
					return
				}
				err := alloc.MemsetAsync(devarray.Ptr(q), 0xAB, tc.size)
				if err == nil {
					err = alloc.Synchronize()
				}
				torchFree(q, tc.size, index, alloc.Handle())
				done <- err
			}()
			select {
			case err := <-done: // the new tensor was written while the side stream was held
				require.NoError(t, err)
				resume()
			case <-time.After(500 * time.Millisecond): // the free waits for the side stream
				resume()
				require.NoError(t, <-done)
			}
			require.NoError(t, side.Synchronize())
			assert.Equal(t, -1, firstDifference(data, got), "the side stream read the tensor it was given, not the next allocation's bytes (the first byte that differs)")
			assert.Empty(t, lastError(true))
			settleAllocator(t, d, alloc, side)
			assert.Zero(t, d.Ledger().Current(accounting.Device), "the device is back to zero")
		})
	}
}

// firstDifference returns the first index where a and b differ, or -1.
func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
