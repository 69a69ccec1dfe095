package devarray_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// elementOffsets lists the byte offset of every element in C order.
func elementOffsets(shape []int, strides []int64) []int64 {
	out := []int64{0}
	for ax := range shape {
		var next []int64
		for _, o := range out {
			for i := range shape[ax] {
				next = append(next, o+int64(i)*strides[ax])
			}
		}
		out = next
	}
	return out
}

// Property: the blocks cover each element's bytes once, in C order, and
// their packed positions follow each other.
func TestBlocksCoverElementsInOrder(t *testing.T) {
	for range 2000 {
		item := int64(1) << rand.IntN(4)
		nd := rand.IntN(5)
		shape := make([]int, nd)
		for i := range shape {
			shape[i] = 1 + rand.IntN(4)
		}
		// A C-contiguous parent, then a random view: permuted, stepped, flipped.
		a := contiguousStrides(shape, item)
		perm := rand.Perm(nd)
		strides := make([]int64, nd)
		sh := make([]int, nd)
		for i, p := range perm {
			sh[i], strides[i] = shape[p], a[p]*int64(1+rand.IntN(2))
			if rand.IntN(4) == 0 {
				strides[i] = -strides[i]
			}
		}
		var got []int64
		var packed int64
		require.NoError(t, devarray.Blocks(sh, strides, item, func(b devarray.Block) error {
			require.Equal(t, packed, b.Packed)
			require.GreaterOrEqual(t, b.Pitch, b.Width)
			require.Zero(t, b.Width%item)
			for r := range b.Height {
				for c := int64(0); c < b.Width; c += item {
					got = append(got, b.Offset+r*b.Pitch+c)
				}
			}
			packed += b.Width * b.Height
			return nil
		}))
		assert.Equal(t, elementOffsets(sh, strides), got, "shape %v strides %v", sh, strides)
	}
}

func contiguousStrides(shape []int, item int64) []int64 {
	s := make([]int64, len(shape))
	acc := item
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= int64(shape[i])
	}
	return s
}

func TestBlocksExamples(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shape   []int
		strides []int64
		want    []devarray.Block
	}{
		{"contiguous is one row", []int{4, 5}, []int64{20, 4}, []devarray.Block{{Width: 80, Height: 1, Pitch: 80}}},
		{"padded rows are one 2-D block", []int{3, 5}, []int64{32, 4}, []devarray.Block{{Width: 20, Height: 3, Pitch: 32}}},
		{"columns are rows of one element", []int{2, 3}, []int64{4, 8}, []devarray.Block{
			{Offset: 0, Packed: 0, Width: 4, Height: 3, Pitch: 8}, {Offset: 4, Packed: 12, Width: 4, Height: 3, Pitch: 8}}},
		{"empty has none", []int{3, 0}, []int64{4, 4}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []devarray.Block
			require.NoError(t, devarray.Blocks(tc.shape, tc.strides, 4, func(b devarray.Block) error {
				got = append(got, b)
				return nil
			}))
			assert.Equal(t, tc.want, got)
		})
	}
}
