package gorgonia_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/interop/gorgonia"
)

// A host tensor → DevArray → tensor shares one memory: a write through the
// second tensor is read through the first.
func TestDenseHostRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dense *tensor.Dense
	}{
		{"float32 matrix", tensor.New(tensor.WithBacking(randomFloats(20)), tensor.WithShape(4, 5))},
		{"float64 3-D", tensor.New(tensor.WithBacking([]float64{1.5, -2, 3, 4.25, 5, 6, 7, 8}), tensor.WithShape(2, 2, 2))},
		{"int64 vector", tensor.New(tensor.WithBacking([]int64{9, -8, 7}), tensor.WithShape(3))},
		{"go int", tensor.New(tensor.WithBacking([]int{4, 5, 6, 7}), tensor.WithShape(2, 2))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := gorgonia.FromDense(tc.dense)
			require.NoError(t, err)
			assert.Equal(t, devarray.Ptr(tc.dense.Uintptr()), a.Ptr())
			assert.Equal(t, []int(tc.dense.Shape()), a.Shape())
			for i, s := range tc.dense.Strides() {
				assert.Equal(t, int64(s)*a.DType().Size(), a.Strides()[i], "byte strides")
			}
			assert.Equal(t, devarray.CPU, a.Device().Kind)
			assert.False(t, a.Owned())

			back, err := gorgonia.ToDense(a)
			require.NoError(t, err)
			assert.True(t, back.IsNativelyAccessible())
			assert.Equal(t, tc.dense.Uintptr(), back.Uintptr(), "no copy")
			assert.Equal(t, tc.dense.Shape(), back.Shape())
			// A write through the new tensor is seen through the first:
			// element 1's value goes to element 0.
			idx := make([]int, back.Dims())
			v := back.Get(1)
			before, err := tc.dense.At(idx...)
			require.NoError(t, err)
			require.NotEqual(t, fmt.Sprint(before), fmt.Sprint(v), "the test needs two different values")
			require.NoError(t, back.SetAt(v, idx...))
			after, err := tc.dense.At(idx...)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprint(v), fmt.Sprint(after))
			require.NoError(t, a.Free())
		})
	}
}

// A device array → tensor → DevArray keeps the pointer, shape, strides and
// dtype; the tensor is marked not host-accessible; the ledger shows no copy
// and no allocation for the hand-overs.
func TestDenseDeviceRoundTrip(t *testing.T) {
	dev := testdev.Open(t)
	data := randomFloats(6 * 7)
	a, err := devarray.FromHost(dev, data, 6, 7)
	require.NoError(t, err)
	defer a.Free()
	row, err := a.Slice(0, 2, 5) // contiguous, at an offset
	require.NoError(t, err)
	for _, arr := range []*devarray.DevArray{a, row} {
		before := dev.Ledger().Snapshot()
		d, err := gorgonia.ToDense(arr)
		require.NoError(t, err)
		assert.False(t, d.IsNativelyAccessible(), "device memory is marked not host-accessible")
		assert.IsType(t, &gorgonia.DeviceEngine{}, d.Engine())
		assert.Equal(t, uintptr(arr.Ptr()), d.Uintptr())
		assert.Equal(t, tensor.Float32, d.Dtype())
		b, err := gorgonia.FromDense(d)
		require.NoError(t, err)
		assert.Equal(t, arr.Ptr(), b.Ptr())
		assert.Equal(t, arr.Shape(), b.Shape())
		assert.Equal(t, arr.Strides(), b.Strides())
		assert.Equal(t, arr.DType(), b.DType())
		assert.Equal(t, arr.Device(), b.Device(), "back on the device it came from")
		diff := accounting.Diff(before, dev.Ledger().Snapshot())
		assert.Zero(t, diff.Copied().Count)
		assert.Zero(t, diff.Allocations())
		want, err := devarray.ToHost[float32](arr)
		require.NoError(t, err)
		got, err := devarray.ToHost[float32](b)
		require.NoError(t, err)
		assert.Equal(t, want, got, "the same memory, read through the device")
		require.NoError(t, b.Free())
	}
}

func TestDenseErrors(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.FromHost(dev, randomFloats(12), 3, 4)
	require.NoError(t, err)
	defer a.Free()
	tr, err := a.Transpose()
	require.NoError(t, err)
	_, err = gorgonia.ToDense(tr)
	assert.ErrorIs(t, err, interop.ErrInterface, "gorgonia tensors have no strides of their own")
	empty, err := devarray.Empty(dev, devarray.Float32, 0, 3)
	require.NoError(t, err)
	defer empty.Free()
	_, err = gorgonia.ToDense(empty)
	assert.ErrorIs(t, err, interop.ErrInterface)
	_, err = gorgonia.FromDense(nil)
	assert.ErrorIs(t, err, interop.ErrInterface)
	_, err = gorgonia.FromDense(tensor.New(tensor.WithBacking([]string{"a", "b"})))
	assert.ErrorIs(t, err, devarray.ErrDType)
	freed, err := devarray.FromHost(dev, randomFloats(4))
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	_, err = gorgonia.ToDense(freed)
	assert.ErrorIs(t, err, devarray.ErrFreed)
}

// The device engine allocates, clears, copies and frees through the
// device, counted in the ledger, and refuses Go access.
func TestDeviceEngine(t *testing.T) {
	dev := testdev.Open(t)
	e := gorgonia.NewDeviceEngine(dev)
	assert.False(t, e.AllocAccessible())
	d := tensor.New(tensor.WithEngine(e), tensor.Of(tensor.Float32), tensor.WithShape(8, 8))
	assert.False(t, d.IsNativelyAccessible())
	assert.Equal(t, int64(1), dev.Ledger().Snapshot().Kinds[accounting.Device].Allocs, "the tensor's memory came from the device")

	src, err := devarray.FromHost(dev, randomFloats(64), 8, 8)
	require.NoError(t, err)
	defer src.Free()
	require.NoError(t, e.Memcpy(d, src))
	back, err := gorgonia.FromDense(d)
	require.NoError(t, err)
	want, err := devarray.ToHost[float32](src)
	require.NoError(t, err)
	got, err := devarray.ToHost[float32](back)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	require.NoError(t, e.Memset(d, float32(0)))
	got, err = devarray.ToHost[float32](back)
	require.NoError(t, err)
	assert.Equal(t, make([]float32, 64), got)
	assert.ErrorIs(t, e.Memset(d, float32(2)), interop.ErrInterface, "the device sets bytes, not values")
	_, err = e.Accessible(d)
	assert.ErrorIs(t, err, devarray.ErrDevice)
	assert.True(t, e.WorksWith(tensor.DataOrder(0)))

	require.NoError(t, e.Free(d, int64(d.MemSize())))
	assert.Equal(t, src.NBytes(), dev.Ledger().Current(accounting.Device)-0, "only src is left")
}

func randomFloats(n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = rand.Float32()*2 - 1
	}
	return xs
}
