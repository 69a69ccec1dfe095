//go:build cgo

package main

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// keepState is the state word of a keep (keep.h: generation << 32 | live
// tensors << 1 | released), its first field.
func keepState(kp keep) *uint64 { return (*uint64)(unsafe.Pointer(kp.k)) }

// A keep's generation is 32 bits: after 2^32 - 1 lives it would come back
// to one a description kept from its first life carries, and that stale
// description would export the freed memory again, counted in another
// array's keep. A keep whose generation runs out is retired instead of
// going back to the pool. The test stands in for the 2^32 - 2 lives in
// between by writing the state word a keep has after them.
func TestKeepGenerationDoesNotWrap(t *testing.T) {
	dev, _ := keepDevice(t)
	require.NoError(t, reapKeeps())
	first, _ := randomArray(t, dev)
	e, err := arrayOf(first)
	require.NoError(t, err)
	kp := e.keep
	require.NotNil(t, kp.k)
	// The first life is generation 1, as a keep fresh from the heap has.
	atomic.StoreUint64(keepState(kp), 1<<32)
	e.keep.gen = 1
	stale, err := describe(first)
	require.NoError(t, err)
	require.Equal(t, uint32(1), stale.keep.gen)
	require.NoError(t, releaseArray(first))

	// 2^32 - 2 lives later the pooled keep's next life is the last one.
	atomic.StoreUint64(keepState(kp), 0xffffffff<<32|1)
	last, _ := randomArray(t, dev)
	e, err = arrayOf(last)
	require.NoError(t, err)
	require.Equal(t, kp.k, e.keep.k, "the pool hands out its last keep first")
	require.Equal(t, uint32(0xffffffff), e.keep.gen)
	require.NoError(t, releaseArray(last))

	next, _ := randomArray(t, dev)
	defer releaseArray(next)
	e, err = arrayOf(next)
	require.NoError(t, err)
	assert.NotEqual(t, kp.k, e.keep.k, "a keep whose generations ran out is not handed out again")
	p, err := keepExport(stale, true)
	if !assert.ErrorIs(t, err, devarray.ErrFreed, "the first life's description exports nothing") {
		deleteDLPack(p)
	}
	assert.Zero(t, keepTensors(kp), "nothing is counted in the retired keep")
}
