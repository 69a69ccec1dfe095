package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// wantAlign is NumPy's alignment of each element type: the item size, half
// of it for the complex types (two floats).
func wantAlign(d devarray.DType) int64 {
	if d == devarray.Complex64 || d == devarray.Complex128 {
		return d.Size() / 2
	}
	return d.Size()
}

func TestDTypeAlign(t *testing.T) {
	for d := devarray.Bool; d.Valid(); d++ {
		assert.Equal(t, wantAlign(d), d.Align(), "%v", d)
	}
	assert.Equal(t, int64(8), devarray.Complex128.Align(), "complex128 is two float64s")
	assert.Equal(t, int64(4), devarray.Complex64.Align(), "complex64 is two float32s")
	assert.Zero(t, devarray.Invalid.Align())
	assert.Zero(t, devarray.DType(200).Align())
}

// Wrap refuses memory a kernel may read (every kind but pageable host
// memory) at an address or with a stride that is not a multiple of the
// element type's alignment, and accepts everything else: aligned
// descriptors, any stride of an axis of one element (it is never stepped),
// an empty array anywhere, one-byte types anywhere, and pageable host
// memory (kind CPU) as it is.
func TestWrapAlignment(t *testing.T) {
	kernelKinds := []devarray.DeviceKind{devarray.CUDA, devarray.CUDAHost, devarray.CUDAManaged, devarray.Sim}
	type tcase struct {
		name       string
		d          devarray.Descriptor
		misaligned bool // refused unless the memory is pageable host memory
	}
	for d := devarray.Bool; d.Valid(); d++ {
		size, align := d.Size(), wantAlign(d)
		base := randomBase()
		rows, cols := 2+rand.IntN(8), 2+rand.IntN(8)
		k := devarray.Ptr(align * (1 + rand.Int64N(16))) // an aligned offset from base
		row := size*int64(cols) + align*rand.Int64N(4)   // an aligned row pitch, maybe padded
		cases := []tcase{
			{"aligned, contiguous", devarray.Descriptor{Ptr: base + k, Shape: []int{rows, cols}, DType: d}, false},
			{"aligned, padded rows", devarray.Descriptor{Ptr: base + k, Shape: []int{rows, cols}, Strides: []int64{row, size}, DType: d}, false},
			{"aligned, transposed", devarray.Descriptor{Ptr: base + k, Shape: []int{cols, rows}, Strides: []int64{size, row}, DType: d}, false},
			{"aligned, reversed rows", devarray.Descriptor{Ptr: base + k + devarray.Ptr(row*int64(rows-1)), Shape: []int{rows, cols},
				Strides: []int64{-row, size}, DType: d}, false},
			{"odd stride of a one-row axis", devarray.Descriptor{Ptr: base + k, Shape: []int{1, cols}, Strides: []int64{row + 1, size}, DType: d}, false},
			{"odd stride of a one-column axis", devarray.Descriptor{Ptr: base + k, Shape: []int{rows, 1}, Strides: []int64{row, 3}, DType: d}, false},
			{"empty at an odd address", devarray.Descriptor{Ptr: base + 1, Shape: []int{rows, 0}, DType: d}, false},
		}
		if align > 1 {
			half := devarray.Ptr(align / 2)
			cases = append(cases,
				tcase{"address off by one byte", devarray.Descriptor{Ptr: base + k + 1, Shape: []int{rows, cols}, DType: d}, true},
				tcase{"address off by half the alignment", devarray.Descriptor{Ptr: base + k + half, Shape: []int{cols}, DType: d}, true},
				tcase{"one element off by one byte", devarray.Descriptor{Ptr: base + k + 1, Shape: []int{1}, DType: d}, true},
				tcase{"row pitch off by one byte", devarray.Descriptor{Ptr: base + k, Shape: []int{rows, cols}, Strides: []int64{row + 1, size}, DType: d}, true},
				tcase{"row pitch off by half the alignment", devarray.Descriptor{Ptr: base + k, Shape: []int{rows, cols},
					Strides: []int64{row + align/2, size}, DType: d}, true},
				tcase{"element stride off by one byte", devarray.Descriptor{Ptr: base + k, Shape: []int{cols}, Strides: []int64{size + 1}, DType: d}, true},
			)
		} else {
			cases = append(cases,
				tcase{"a one-byte type at an odd address", devarray.Descriptor{Ptr: base + 2*k + 1, Shape: []int{rows, cols}, DType: d}, false},
				tcase{"a one-byte type with odd strides", devarray.Descriptor{Ptr: base + k, Shape: []int{rows, cols}, Strides: []int64{int64(2*cols + 1), 3}, DType: d}, false},
			)
		}
		for _, tc := range cases {
			t.Run(d.String()+"/"+tc.name, func(t *testing.T) {
				for _, kind := range kernelKinds {
					desc := tc.d
					desc.Device = devarray.DeviceID{Kind: kind}
					a, err := devarray.Wrap(nil, desc)
					if tc.misaligned {
						assert.Nil(t, a, "%v", kind)
						assert.ErrorIs(t, err, devarray.ErrMisaligned, "%v memory: %+v", kind, desc)
						continue
					}
					require.NoError(t, err, "%v memory: %+v", kind, desc)
					assert.Equal(t, desc.Ptr, a.Ptr())
				}
				desc := tc.d
				desc.Device = devarray.DeviceID{Kind: devarray.CPU}
				a, err := devarray.Wrap(nil, desc)
				require.NoError(t, err, "pageable host memory is not checked: %+v", desc)
				assert.Equal(t, desc.Ptr, a.Ptr())
			})
		}
	}
}
