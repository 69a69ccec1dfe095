//go:build cgo

package interop_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/pool"
)

// streamOrderedArray is a way to make an array of stream-ordered memory
// for work on stream s: the array, and how its bytes in use are read.
type streamOrderedArray struct {
	name string
	make func(t *testing.T, dev device.Device, s device.Stream, rows, cols int) (a *devarray.DevArray, inUse func() int64)
}

var streamOrderedArrays = []streamOrderedArray{
	{"EmptyAsync", func(t *testing.T, dev device.Device, s device.Stream, rows, cols int) (*devarray.DevArray, func() int64) {
		a, err := devarray.EmptyAsync(dev, s, devarray.Float32, rows, cols)
		require.NoError(t, err)
		return a, func() int64 { return dev.Ledger().Current(accounting.StreamOrdered) }
	}},
	{"caching pool over the default stream-ordered pool", func(t *testing.T, dev device.Device, _ device.Stream, rows, cols int) (*devarray.DevArray, func() int64) {
		mp, err := dev.DefaultMemPool()
		require.NoError(t, err)
		p := pool.New(dev, pool.FromMemPool(mp))
		t.Cleanup(func() { assert.NoError(t, p.Release()) })
		a, err := devarray.Empty(p, devarray.Float32, rows, cols)
		require.NoError(t, err)
		return a, func() int64 { return p.Stats().InUse }
	}},
}

// An array of stream-ordered memory, written on its stream behind a hold,
// goes through the CUDA Array Interface with that stream named (the
// consumer's stream waits for it on the device, the caller does not) and
// through DLPack (the tensor keeps the memory past the array's free): what
// the consumer reads is what the producer wrote, and neither export copies
// or allocates.
func TestStreamOrderedExports(t *testing.T) {
	for _, k := range streamOrderedArrays {
		t.Run(k.name, func(t *testing.T) {
			r := rand.For(t)
			dev := testdev.Open(t)
			producer, consumer := newTestStream(t, dev), newTestStream(t, dev)
			rows, cols := 2+r.IntN(30), 2+r.IntN(30)
			resume := testdev.Hold(t, producer)
			a, inUse := k.make(t, dev, producer, rows, cols)
			want := testdev.RandomBytes(int(a.NBytes()))
			src := testdev.PageLocked(t, dev, a.NBytes()) // pageable memory would wait for the hold
			copy(src, want)
			require.NoError(t, producer.CopyHtoDAsync(a.Ptr(), src))
			held := inUse()
			assert.GreaterOrEqual(t, held, a.NBytes())
			got := testdev.PageLocked(t, dev, a.NBytes())
			before := dev.Ledger().Snapshot()

			m, err := interop.ExportCAI(a, producer.Handle())
			require.NoError(t, err)
			b, err := interop.ImportCAIOn(dev, consumer, m)
			require.NoError(t, err)
			assert.Equal(t, a.Ptr(), b.Ptr())
			require.NoError(t, consumer.CopyDtoHAsync(got, b.Ptr()))
			ev, err := dev.NewEvent()
			require.NoError(t, err)
			defer ev.Close()
			require.NoError(t, consumer.Record(ev))
			done, err := ev.Query()
			require.NoError(t, err)
			assert.False(t, done, "the consumer's stream waits for the producer's")
			resume()
			require.NoError(t, consumer.Synchronize())
			assert.Equal(t, want, got, "the consumer reads what the producer wrote")
			require.NoError(t, b.Free())

			capsule, err := interop.ExportDLPack(a)
			require.NoError(t, err)
			if a.StreamOrdered() {
				require.NoError(t, a.FreeAsync(producer), "freed in the producer's order while the tensor lives")
			} else {
				require.NoError(t, a.Free())
			}
			assert.Equal(t, held, inUse(), "the tensor keeps the memory")
			c, err := interop.ImportDLPack(dev, capsule)
			require.NoError(t, err)
			require.NoError(t, producer.Synchronize())
			back := make([]byte, c.NBytes())
			require.NoError(t, c.CopyTo(back))
			assert.Equal(t, want, back, "the DLPack consumer reads it")
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Zero(t, diff.Allocations(), "the exports allocate nothing")
			require.NoError(t, c.Free(), "the deleter frees it")
			require.NoError(t, producer.Synchronize())
			assert.Less(t, inUse(), held, "the last holder gone, the memory went back")
		})
	}
}

// newTestStream returns a stream of dev, closed when the test ends.
func newTestStream(t *testing.T, dev device.Device) device.Stream {
	t.Helper()
	s, err := dev.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}
