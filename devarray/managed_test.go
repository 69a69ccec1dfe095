package devarray_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// EmptyManaged allocates managed memory (counted as managed, not device
// memory) that holds what is copied in, views and frees as any array, and
// refuses what it cannot allocate with.
func TestEmptyManaged(t *testing.T) {
	r := rand.For(t)
	dev := newDev(t)
	for _, attach := range []devarray.Attach{devarray.AttachGlobal, devarray.AttachHost} {
		t.Run(attach.String(), func(t *testing.T) {
			rows, cols := 1+r.IntN(40), 1+r.IntN(40)
			a, err := devarray.EmptyManaged(dev, attach, devarray.Float32, rows, cols)
			require.NoError(t, err)
			assert.True(t, a.Managed())
			assert.False(t, a.StreamOrdered())
			want := randomFloat32(rows * cols)
			require.NoError(t, devarray.CopyFromHost(a, want))
			got, err := devarray.ToHost[float32](a)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			v, err := a.Slice(0, 0, 1)
			require.NoError(t, err)
			assert.True(t, v.Managed(), "a view of managed memory is managed")
			assert.Equal(t, (int64(rows*cols*4)+255)/256*256, dev.Ledger().Current(accounting.Managed))
			assert.Zero(t, dev.Ledger().Current(accounting.Device))
			require.NoError(t, a.Free())
			assert.Zero(t, dev.Ledger().Current(accounting.Managed))
		})
	}
	before := dev.Ledger().Snapshot().Kinds[accounting.Managed].Allocs
	_, err := devarray.EmptyManaged(nil, devarray.AttachGlobal, devarray.Float32, 4)
	assert.ErrorIs(t, err, devarray.ErrNoBackend)
	_, err = devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.DType(200), 4)
	assert.ErrorIs(t, err, devarray.ErrDType)
	_, err = devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Float32, -1)
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, err = devarray.EmptyManaged(dev, devarray.AttachSingle, devarray.Float32, 4)
	assert.Error(t, err, "a single-stream attachment is cuStreamAttachMemAsync's, not an allocation's")
	assert.Equal(t, before, dev.Ledger().Snapshot().Kinds[accounting.Managed].Allocs, "nothing allocated for a refused call")
	var nilArr *devarray.DevArray
	assert.False(t, nilArr.Managed())
	assert.Equal(t, "Attach(9)", devarray.Attach(9).String())
}
