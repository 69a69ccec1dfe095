//go:build cgo

package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// filledArray allocates a float32 array of n elements on dev, filled with
// fresh random numbers, and returns it with the bytes the ledger counts
// for it (the allocator's rounding included).
func filledArray(t *testing.T, dev uint64, led *accounting.Ledger, n int) (uint64, int64) {
	t.Helper()
	before := led.Current(accounting.Device)
	h, err := empty(dev, "float32", []int{n}, false)
	require.NoError(t, err)
	data := make([]float32, n)
	for i := range data {
		data[i] = 1 + rand.Float32()
	}
	require.NoError(t, copyHost(h, unsafe.Pointer(&data[0]), int64(4*n), true))
	return h, led.Current(accounting.Device) - before
}

// Memory a DLPack consumer let go of (an array freed while a tensor of it
// lived, then the tensor deleted) is free again for every allocation the
// library makes, not only cuarray_empty's: the allocator's malloc (PyTorch
// and CuPy) and a DLPack copy (copy=True) let it go first. Under a limit
// that the freed array's bytes would break, each fits.
func TestKeepReapedBeforeEveryAllocation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		allocate func(t *testing.T, index int, small uint64, size int64) (free func())
	}{
		{"allocator malloc", func(t *testing.T, index int, _ uint64, size int64) func() {
			p := torchMalloc(size, index, 0)
			require.NotZero(t, p, "the malloc fits once the freed array's memory is let go: %s", lastError(true))
			return func() { torchFree(p, size, index, 0) }
		}},
		{"DLPack copy", func(t *testing.T, _ int, small uint64, _ int64) func() {
			p, err := toDLPack(small, true, true, consumerHost)
			require.NoError(t, err, "the copy fits once the freed array's memory is let go")
			return func() { deleteDLPack(p) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer onOneThread()()
			d, index := allocatorDevice(t, 61, false, 0)
			defer func() { require.NoError(t, d.Ledger().SetLimit(accounting.Device, 0)) }()
			dev, led := deviceHandle(d), d.Ledger()
			require.NoError(t, reapKeeps())
			start := led.Current(accounting.Device)

			// The big array is freed while a tensor of it lives; the small
			// one stays, and is what the copy copies.
			big, bigBytes := filledArray(t, dev, led, 1<<16+rand.IntN(1<<16))
			small, smallBytes := filledArray(t, dev, led, 1<<10+rand.IntN(1<<14))
			require.Less(t, smallBytes, bigBytes)
			p, err := toDLPack(big, true, false, consumerNoSync)
			require.NoError(t, err)
			require.NoError(t, releaseArray(big))
			held := led.Current(accounting.Device)
			require.Equal(t, start+bigBytes+smallBytes, held, "the live tensor keeps the freed array's bytes")
			deleteDLPack(p) // C only: the memory waits for the library's next call

			// With the freed array counted, the allocation would pass the
			// limit by half its size; without it, it fits with room left.
			require.NoError(t, led.SetLimit(accounting.Device, held+smallBytes/2))
			free := tc.allocate(t, index, small, smallBytes)
			assert.Equal(t, start+2*smallBytes, led.Current(accounting.Device), "the freed array's bytes went back first")
			free()
			require.NoError(t, releaseArray(small))
			assert.Equal(t, start, led.Current(accounting.Device), "the ledger is back where it started")
		})
	}
}
