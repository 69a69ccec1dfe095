//go:build cgo

package main

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
)

// asyncAllocatorDevice is allocatorDevice with the memory from the
// device's default stream-ordered pool.
func asyncAllocatorDevice(t *testing.T, ordinal int, usePool bool, limit int64) (device.Device, int) {
	t.Helper()
	return allocatorDeviceOf(t, ordinal, usePool, true, limit)
}

// The allocator over the device's default stream-ordered pool, alone (each
// malloc a cuMemAllocAsync on the stream it names) and under the caching
// pool: blocks on the legacy default stream and on two streams hold what
// is written to them; frees on the allocation's stream, on another one
// (which waits for the device first) and through PyTorch's entry point
// give everything back; the ledger counts stream-ordered memory only.
func TestAllocatorStreamOrdered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ordinal int
		pool    bool
	}{
		{"async", 31, false},
		{"pool over async", 32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.For(t)
			d, index := asyncAllocatorDevice(t, tc.ordinal, tc.pool, 0)
			led := d.Ledger()
			s1, err := d.NewStream()
			require.NoError(t, err)
			defer s1.Close()
			s2, err := d.NewStream()
			require.NoError(t, err)
			defer s2.Close()
			streams := []uintptr{0, s1.Handle(), s2.Handle()}
			before := led.Snapshot()

			type block struct {
				p      uintptr
				size   int64
				stream uintptr
			}
			var held []block
			for i := range 12 {
				size := 1 + r.Int64N(256<<10)
				stream := streams[i%len(streams)]
				p, err := allocate(size, index, stream)
				require.NoError(t, err)
				require.NotZero(t, p)
				want := make([]byte, min(size, 4096))
				for j := range want {
					want[j] = byte(1 + r.IntN(255))
				}
				require.NoError(t, d.Synchronize(), "the host uses it after its stream")
				require.NoError(t, d.CopyHtoD(devarray.Ptr(p), want))
				got := make([]byte, len(want))
				require.NoError(t, d.CopyDtoH(got, devarray.Ptr(p)))
				require.Equal(t, want, got, "block %d holds what was written", i)
				held = append(held, block{p, size, stream})
			}
			d1 := accounting.Diff(before, led.Snapshot())
			assert.Zero(t, d1.Kinds[accounting.Device].Allocs, "nothing from cuMemAlloc")
			assert.Positive(t, d1.Kinds[accounting.StreamOrdered].Current, "stream-ordered memory is handed out")
			if tc.pool {
				assert.Less(t, d1.Kinds[accounting.StreamOrdered].Allocs, int64(len(held)), "the pool's segments, fewer than its blocks")
			} else {
				assert.Equal(t, int64(len(held)), d1.Kinds[accounting.StreamOrdered].Allocs, "one cuMemAllocAsync a malloc")
			}
			for i, b := range held {
				switch i % 3 {
				case 0:
					require.NoError(t, release(b.p, b.size, index, b.stream), "on its own stream")
				case 1:
					require.NoError(t, release(b.p, b.size, index, streams[(i+1)%len(streams)]), "on another stream")
				default:
					torchFree(b.p, b.size, index, b.stream)
				}
			}
			require.NoError(t, d.Synchronize())
			allocator.Lock()
			p := allocator.asyncPools[d]
			allocator.Unlock()
			if tc.pool {
				require.NotNil(t, p)
				assert.Zero(t, p.Stats().InUse)
				require.NoError(t, p.Release())
				require.NoError(t, d.Synchronize())
			} else {
				assert.Nil(t, p, "no pool without the pool flag")
			}
			assert.Zero(t, led.Current(accounting.StreamOrdered), "every block went back")
		})
	}
}

// The limit of an allocator over the stream-ordered pool is the ledger's
// on stream-ordered memory: a malloc past it fails with cuarray's message
// and holds nothing.
func TestAllocatorStreamOrderedLimit(t *testing.T) {
	r := rand.For(t)
	limit := 1<<20 + r.Int64N(1<<20)
	d, index := asyncAllocatorDevice(t, 33, false, limit)
	defer func() { _, _ = useAllocatorOf(deviceHandle(d), false, true, 0) }()
	assert.Equal(t, limit, d.Ledger().Limit(accounting.StreamOrdered))
	a, err := allocate(limit/2, index, 0)
	require.NoError(t, err)
	_, err = allocate(limit, index, 0)
	require.ErrorIs(t, err, accounting.ErrOutOfMemory)
	assert.Contains(t, message(err), fmt.Sprintf("malloc async %d bytes", limit))
	assert.Equal(t, accounting.AllocBytes(limit/2), d.Ledger().Current(accounting.StreamOrdered), "the refused malloc holds nothing")
	require.NoError(t, release(a, limit/2, index, 0))
	assert.Zero(t, d.Ledger().Current(accounting.StreamOrdered))
}
