package gorgonia_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop/gorgonia"
)

// A tensor ToDense makes holds nothing (docs/guide.md, "Zero-copy rules"):
// the memory goes at the owner's Free, unless the tensor's user holds it
// for as long as the tensor is used.
func TestDenseHoldsNothing(t *testing.T) {
	dev := testdev.Open(t)
	current := func() int64 { return dev.Ledger().Current(accounting.Device) }

	a, err := devarray.FromHost(dev, randomFloats(12), 3, 4)
	require.NoError(t, err)
	_, err = gorgonia.ToDense(a)
	require.NoError(t, err)
	require.NoError(t, a.Free())
	assert.Zero(t, current(), "the memory went at Free, though the tensor still points at it")

	data := randomFloats(12)
	a, err = devarray.FromHost(dev, data, 3, 4)
	require.NoError(t, err)
	release, err := a.Hold()
	require.NoError(t, err)
	d, err := gorgonia.ToDense(a)
	require.NoError(t, err)
	held := current()
	require.NoError(t, a.Free())
	assert.Equal(t, held, current(), "the hold keeps the memory")
	back, err := gorgonia.FromDense(d)
	require.NoError(t, err)
	got, err := devarray.ToHost[float32](back)
	require.NoError(t, err)
	assert.Equal(t, data, got, "the tensor reads the freed array's elements")
	require.NoError(t, back.Free())
	require.NoError(t, release())
	assert.Zero(t, current(), "the release freed the memory")
}
