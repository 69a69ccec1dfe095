package device_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

// DevArrays on a stream: EmptyAsync allocates in the stream's order,
// FreeAsync frees in a stream's order, and the array goes through the CUDA
// Array Interface and DLPack as any device memory.
func TestEmptyAsyncArray(t *testing.T) {
	dev := testdev.Open(t)
	ss := newStreams(t, dev, 2)
	before := dev.Ledger().Snapshot()
	a, err := devarray.EmptyAsync(dev, ss[0], devarray.Float32, 64, 48)
	require.NoError(t, err)
	assert.True(t, a.StreamOrdered())
	want := testdev.RandomBytes(int(a.NBytes()))
	require.NoError(t, ss[0].CopyHtoDAsync(a.Ptr(), want))
	require.NoError(t, ss[0].Synchronize(), "other streams and the host may use it after a synchronize")

	m, err := interop.ExportCAI(a, ss[0].Handle())
	require.NoError(t, err)
	b, stream, err := interop.ImportCAI(dev, m)
	require.NoError(t, err)
	assert.Equal(t, ss[0].Handle(), stream)
	assert.Equal(t, a.Ptr(), b.Ptr())
	got := make([]byte, a.NBytes())
	require.NoError(t, b.CopyTo(got))
	assert.Equal(t, want, got, "the CAI import reads the stream-ordered memory")
	require.NoError(t, b.Free())

	{
		capsule, err := interop.ExportDLPack(a)
		require.NoError(t, err)
		c, err := interop.ImportDLPack(dev, capsule)
		require.NoError(t, err)
		assert.Equal(t, a.Ptr(), c.Ptr())
		assert.Equal(t, a.Shape(), c.Shape())
		got := make([]byte, c.NBytes())
		require.NoError(t, c.CopyTo(got))
		assert.Equal(t, want, got, "the DLPack import reads the stream-ordered memory")
		require.NoError(t, c.Free())
	}

	v, err := a.Slice(0, 0, 8)
	require.NoError(t, err)
	assert.ErrorIs(t, v.FreeAsync(ss[1]), devarray.ErrNotOwner, "a view frees nothing")
	plain, err := devarray.Empty(dev, devarray.Float32, 4)
	require.NoError(t, err)
	assert.ErrorIs(t, plain.FreeAsync(ss[1]), devarray.ErrNotOwner, "Empty's memory is freed with Free")
	require.NoError(t, plain.Free())

	require.NoError(t, ss[1].WaitEvent(recorded(t, dev, ss[0])))
	require.NoError(t, a.FreeAsync(ss[1]), "freed on another stream, ordered after the first")
	require.NoError(t, a.FreeAsync(ss[1]), "FreeAsync is idempotent")
	assert.ErrorIs(t, a.Err(), devarray.ErrFreed)
	require.NoError(t, ss[1].Synchronize())
	k := accounting.Diff(before, dev.Ledger().Snapshot()).Kinds[accounting.StreamOrdered]
	assert.Equal(t, int64(1), k.Allocs)
	assert.Equal(t, int64(1), k.Frees)
	assert.Zero(t, k.Current)

	c, err := devarray.EmptyAsync(dev, ss[0], devarray.Int32, 10)
	require.NoError(t, err)
	require.NoError(t, c.Free(), "Free frees on the allocating stream")
	assert.Zero(t, dev.Ledger().Current(accounting.StreamOrdered))
	require.NoError(t, ss[0].Synchronize())
}

// recorded returns an event recorded on s now, closed at the end of the test.
func recorded(t *testing.T, dev device.Device, s device.Stream) device.Event {
	t.Helper()
	ev, err := dev.NewEvent()
	require.NoError(t, err)
	t.Cleanup(func() { ev.Close() })
	require.NoError(t, s.Record(ev))
	return ev
}
