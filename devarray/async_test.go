package devarray_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// EmptyAsync refuses what it cannot allocate with, and a Hold defers
// FreeAsync as it defers Free: the last release frees the memory on the
// stream FreeAsync named.
func TestEmptyAsyncHoldsAndErrors(t *testing.T) {
	dev := newDev(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	_, err = devarray.EmptyAsync(nil, s, devarray.Float32, 4)
	assert.ErrorIs(t, err, devarray.ErrNoBackend)
	_, err = devarray.EmptyAsync(dev, nil, devarray.Float32, 4)
	assert.ErrorIs(t, err, devarray.ErrNoBackend)
	_, err = devarray.EmptyAsync(dev, s, devarray.DType(200), 4)
	assert.ErrorIs(t, err, devarray.ErrDType)
	_, err = devarray.EmptyAsync(dev, s, devarray.Float32, -1)
	assert.Error(t, err)
	assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.StreamOrdered].Allocs, "nothing allocated for a refused call")

	a, err := devarray.EmptyAsync(dev, s, devarray.Float64, 300)
	require.NoError(t, err)
	assert.Equal(t, int64(2400), a.NBytes())
	assert.Equal(t, int64(2560), dev.Ledger().Current(accounting.StreamOrdered), "counted rounded up to 256 bytes")
	release, err := a.Hold()
	require.NoError(t, err)
	require.NoError(t, a.FreeAsync(s))
	assert.ErrorIs(t, a.Err(), devarray.ErrFreed)
	assert.Equal(t, int64(2560), dev.Ledger().Current(accounting.StreamOrdered), "held: not freed yet")
	require.NoError(t, release())
	assert.Zero(t, dev.Ledger().Current(accounting.StreamOrdered), "the last release freed it")
	require.NoError(t, s.Synchronize())
	var nilArr *devarray.DevArray
	assert.NoError(t, nilArr.FreeAsync(s))
	assert.False(t, nilArr.StreamOrdered())
}
