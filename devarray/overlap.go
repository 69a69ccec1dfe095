package devarray

import (
	"cmp"
	"math"
	"slices"
)

// disjoint reports whether the elements of a layout (shape, byte strides,
// itemsize bytes each) provably occupy disjoint bytes: sorted by |stride|,
// the axes longer than 1 each step at least as far as the bytes spanned
// by the axes inside them (one element for the innermost). That proves
// it; a layout that fails it may still be disjoint (axes interleaved with
// each other), but every layout a view of a packed array can have passes,
// and a zero stride or a stride below the bytes inside it fails. A layout
// with no elements is disjoint; one whose extent overflows is not proven
// so. The cost is a sort of the axes, no walk of the elements.
func disjoint(shape []int, strides []int64, itemsize int64) bool {
	type axis struct {
		n      int64
		stride uint64
	}
	axes := make([]axis, 0, len(shape))
	for i, n := range shape {
		if n == 0 {
			return true
		}
		if n > 1 {
			axes = append(axes, axis{int64(n), abs64(strides[i])})
		}
	}
	slices.SortFunc(axes, func(a, b axis) int { return cmp.Compare(a.stride, b.stride) })
	span := uint64(itemsize) // bytes spanned by the axes sorted so far
	for _, ax := range axes {
		if ax.stride < span || ax.stride > math.MaxInt64 {
			return false
		}
		reach, ok := mul64(ax.n-1, int64(ax.stride))
		if !ok {
			return false
		}
		next, ok := add64(int64(span), reach)
		if !ok {
			return false
		}
		span = uint64(next)
	}
	return true
}

// Disjoint reports whether no two elements share a byte of memory, as
// far as the layout proves it cheaply (see ScatterOn): false for a zero
// stride (a broadcast) or a stride smaller than the bytes it steps over.
func (h *HostStrided) Disjoint() bool { return h.disjoint }
