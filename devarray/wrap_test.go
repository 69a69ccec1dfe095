package devarray_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// randomBase returns a 256-byte-aligned device address, as an allocator
// hands out.
func randomBase() devarray.Ptr { return devarray.Ptr(0x10000 + 256*rand.Int64N(1<<24)) }

// Wrap accepts the edge cases other libraries hand over: an empty tensor
// with a null data pointer (PyTorch's and CuPy's), an empty tensor in a
// zero-byte allocation, a descriptor that starts at its allocation's base,
// one that fills it exactly and one that ends at its last byte.
func TestWrapAccepts(t *testing.T) {
	cuda := devarray.DeviceID{Kind: devarray.CUDA}
	n := 2 + rand.IntN(100)
	base := randomBase()
	f32 := devarray.Float32
	tests := []struct {
		name string
		d    devarray.Descriptor
		opts []devarray.WrapOption
		size int64
	}{
		{"null pointer, no elements", devarray.Descriptor{Shape: []int{0, n}, DType: f32, Device: cuda}, nil, 0},
		{"null pointer, empty 1-D", devarray.Descriptor{Shape: []int{0}, DType: devarray.Float64, Device: cuda}, nil, 0},
		{"no elements in a zero-byte allocation", devarray.Descriptor{Ptr: base, Shape: []int{n, 0}, DType: f32, Device: cuda},
			[]devarray.WrapOption{devarray.WithBounds(base, 0)}, 0},
		{"the whole allocation from its base", devarray.Descriptor{Ptr: base, Shape: []int{n}, DType: f32, Device: cuda},
			[]devarray.WrapOption{devarray.WithBounds(base, int64(4*n))}, int64(n)},
		{"one element at its base", devarray.Descriptor{Ptr: base, Shape: []int{1}, DType: f32, Device: cuda},
			[]devarray.WrapOption{devarray.WithBounds(base, int64(4*n))}, 1},
		{"its last element", devarray.Descriptor{Ptr: base + devarray.Ptr(4*(n-1)), Shape: []int{1}, DType: f32, Device: cuda},
			[]devarray.WrapOption{devarray.WithBounds(base, int64(4*n))}, 1},
		{"reversed, from its last element down to its base", devarray.Descriptor{Ptr: base + devarray.Ptr(4*(n-1)), Shape: []int{n},
			Strides: []int64{-4}, DType: f32, Device: cuda}, []devarray.WrapOption{devarray.WithBounds(base, int64(4*n))}, int64(n)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := devarray.Wrap(nil, tt.d, tt.opts...)
			require.NoError(t, err)
			assert.Equal(t, tt.d.Ptr, a.Ptr())
			assert.Equal(t, tt.d.Shape, a.Shape())
			assert.Equal(t, tt.size, a.Size())
			assert.False(t, a.Owned())
			require.NoError(t, a.Free())
		})
	}
}

// Without WithBounds the allocation is unknown, so views may reach any
// element of the descriptor: Wrap does not invent a bound.
func TestWrapUnboundedViews(t *testing.T) {
	rows, cols := 2+rand.IntN(30), 2+rand.IntN(30)
	a, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: randomBase(), Shape: []int{rows, cols}, DType: devarray.Float32,
		Device: devarray.DeviceID{Kind: devarray.CUDA}})
	require.NoError(t, err)
	last, err := a.Slice(0, rows-1, rows)
	require.NoError(t, err, "the last row")
	assert.Equal(t, a.Ptr()+devarray.Ptr(4*cols*(rows-1)), last.Ptr())
	flat, err := a.Reshape(-1)
	require.NoError(t, err)
	assert.Equal(t, int64(rows*cols), flat.Size())
	flipped, err := a.Flip(1)
	require.NoError(t, err)
	assert.Equal(t, a.Ptr()+devarray.Ptr(4*(cols-1)), flipped.Ptr())
}

// A descriptor that reaches outside its allocation is refused with an
// error that names the bytes it would touch, relative to the allocation's
// base, and the allocation's size: what the caller needs to find the bad
// pointer, shape or stride.
func TestWrapBoundsErrorNamesTheBytes(t *testing.T) {
	base := randomBase()
	n := int64(4 + rand.IntN(60))
	size := 4 * n
	f32 := devarray.Float32
	cuda := devarray.DeviceID{Kind: devarray.CUDA}
	k := int64(1 + rand.IntN(int(n-1))) // elements into the allocation
	tests := []struct {
		name   string
		d      devarray.Descriptor
		lo, hi int64
	}{
		{"one element past the end", devarray.Descriptor{Ptr: base + devarray.Ptr(4*k), Shape: []int{int(n - k + 1)}, DType: f32, Device: cuda},
			4 * k, size + 4},
		{"a reversed axis below the base", devarray.Descriptor{Ptr: base + devarray.Ptr(4*k), Shape: []int{int(k + 2)},
			Strides: []int64{-4}, DType: f32, Device: cuda}, -4, 4*k + 4},
		{"rows past the end", devarray.Descriptor{Ptr: base + devarray.Ptr(4*k), Shape: []int{2, int(n)},
			DType: f32, Device: cuda}, 4 * k, 4*k + 2*size},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := devarray.Wrap(nil, tt.d, devarray.WithBounds(base, size))
			assert.Nil(t, a)
			require.ErrorIs(t, err, devarray.ErrBounds)
			assert.Contains(t, err.Error(), fmt.Sprintf("bytes [%d, %d)", tt.lo, tt.hi))
			assert.Contains(t, err.Error(), fmt.Sprintf("%d-byte allocation at %v", size, base))
		})
	}
}
