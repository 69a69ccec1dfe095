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

// A managed array of no elements is an array, as Empty's is: it gets a
// distinct, valid pointer (cuMemAllocManaged refuses 0 bytes, so it
// takes one), views as an empty host view, and frees.
func TestEmptyManagedNoElements(t *testing.T) {
	r := rand.For(t)
	dev := newDev(t)
	for _, tc := range []struct {
		name   string
		attach devarray.Attach
		shape  []int
	}{
		{"global [0]", devarray.AttachGlobal, []int{0}},
		{"host [n 0]", devarray.AttachHost, []int{1 + r.IntN(16), 0}},
		{"global [0 n m]", devarray.AttachGlobal, []int{0, 1 + r.IntN(16), 1 + r.IntN(16)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := devarray.EmptyManaged(dev, tc.attach, devarray.Float64, tc.shape...)
			require.NoError(t, err)
			assert.True(t, a.Managed())
			assert.Equal(t, tc.shape, a.Shape())
			assert.Zero(t, a.Size())
			assert.NotZero(t, a.Ptr())
			v, err := a.HostView(true)
			require.NoError(t, err)
			assert.Empty(t, v)
			got, err := devarray.ToHost[float64](a)
			require.NoError(t, err)
			assert.Empty(t, got)
			require.NoError(t, a.Free())
			assert.Zero(t, dev.Ledger().Current(accounting.Managed))
		})
	}
}
