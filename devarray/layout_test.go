package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// A layout may reach up to math.MaxInt64 bytes, element count, extent
// (lowest to highest byte) and each axis's reach alike; one byte more, or
// a stride whose reach passes int64 either way, is ErrOverflow, never a
// wrapped-around extent that would pass a bounds check.
func TestLayoutLimits(t *testing.T) {
	cuda := devarray.DeviceID{Kind: devarray.CUDA}
	// math.MaxInt64 = 7 * 7 * 73 * 127 * 337 * 92737 * 649657.
	maxShape := []int{7, 7, 73, 127, 337, 92737, 649657}
	const q = int64(1) << 62
	tests := []struct {
		name    string
		shape   []int
		strides []int64
		dtype   devarray.DType
		size    int64 // elements, when accepted
		lo, hi  int64 // extent, when accepted
		want    error
	}{
		{"math.MaxInt64 one-byte elements", maxShape, nil, devarray.Uint8, math.MaxInt64, 0, math.MaxInt64, nil},
		{"math.MaxInt64 two-byte elements", maxShape, nil, devarray.Int16, 0, 0, 0, devarray.ErrOverflow},
		{"an extent of exactly math.MaxInt64 bytes both ways", []int{2, 2}, []int64{q, -(q - 2)}, devarray.Uint8, 4, -(q - 2), q + 1, nil},
		{"an extent one byte past math.MaxInt64 both ways", []int{2, 2}, []int64{q, -(q - 1)}, devarray.Uint8, 0, 0, 0, devarray.ErrOverflow},
		{"an extent of 2^63 bytes and more both ways", []int{2, 2}, []int64{q, -q}, devarray.Float32, 0, 0, 0, devarray.ErrOverflow},
		{"two reaches below -2^63 together", []int{3, 3}, []int64{-q, -q}, devarray.Float32, 0, 0, 0, devarray.ErrOverflow},
		{"a reach just below -2^63", []int{4}, []int64{-q - 8}, devarray.Float32, 0, 0, 0, devarray.ErrOverflow},
		{"a reach of 3 * -2^63", []int{4}, []int64{math.MinInt64}, devarray.Float32, 0, 0, 0, devarray.ErrOverflow},
		{"a reach of 3 * 2^62", []int{4}, []int64{q}, devarray.Float32, 0, 0, 0, devarray.ErrOverflow},
		{"a reach of exactly -2^63", []int{3}, []int64{-q}, devarray.Float32, 0, 0, 0, devarray.ErrOverflow},
		{"a reach of -2^63 from a one-byte element", []int{3}, []int64{-q}, devarray.Uint8, 0, 0, 0, devarray.ErrOverflow},
		{"an extent of math.MaxInt64 bytes below", []int{2}, []int64{math.MinInt64 + 2}, devarray.Uint8, 2, math.MinInt64 + 2, 1, nil},
		{"an extent of 2^63 bytes below", []int{2}, []int64{math.MinInt64 + 1}, devarray.Uint8, 0, 0, 0, devarray.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := devarray.Descriptor{Ptr: devarray.Ptr(1<<40 + 256*rand.Int64N(1<<20)), Shape: tt.shape, Strides: tt.strides,
				DType: tt.dtype, Device: cuda}
			a, err := devarray.Wrap(nil, d)
			if tt.want != nil {
				assert.Nil(t, a)
				assert.ErrorIs(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.size, a.Size())
			lo, hi := a.Extent()
			assert.Equal(t, []int64{tt.lo, tt.hi}, []int64{lo, hi})
			assert.Equal(t, uintptr(hi-lo), a.MemSize())
		})
	}
}
