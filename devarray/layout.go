package devarray

import (
	"fmt"
	"math"
)

// mul64 multiplies with overflow detection: the product wrapped to 64
// bits is exact when dividing it by a gives b back, except for
// -1 × MinInt64, whose wrapped quotient is b again.
func mul64(a, b int64) (int64, bool) {
	p := a * b
	if a != 0 && (p/a != b || a == -1 && b == math.MinInt64) {
		return 0, false
	}
	return p, true
}

// add64 adds with overflow detection: adding a positive b must make the
// sum larger than a, adding anything else must not.
func add64(a, b int64) (int64, bool) {
	s := a + b
	if (s > a) != (b > 0) {
		return 0, false
	}
	return s, true
}

// sub64 subtracts with overflow detection (a - b for b = math.MinInt64
// too, whose negation is itself): taking a positive b away must make the
// difference smaller than a, taking anything else away must not.
func sub64(a, b int64) (int64, bool) {
	d := a - b
	if (d < a) != (b > 0) {
		return 0, false
	}
	return d, true
}

// abs64 returns |a|, 2^63 for math.MinInt64 included: sign is 0 for a
// non-negative a and -1 (every bit set) for a negative one, and
// (a XOR sign) - sign is a or its two's-complement negation.
func abs64(a int64) uint64 {
	sign := a >> 63
	return uint64(a^sign) - uint64(sign)
}

// layout is a validated shape and byte strides with the extent they reach.
type layout struct {
	shape   []int
	strides []int64
	size    int64 // number of elements
	lo, hi  int64 // lowest byte touched, one past the highest, relative to element 0
}

// newLayout validates shape and strides for elements of itemsize bytes and
// computes the element count and extent, refusing anything that overflows.
// nil strides mean C-contiguous. Its errors have no "devarray: " prefix:
// every caller wraps them with its own ("devarray: wrap: %w").
func newLayout(shape []int, strides []int64, itemsize int64) (layout, error) {
	if strides != nil && len(strides) != len(shape) {
		return layout{}, fmt.Errorf("%d strides for %d dimensions: %w", len(strides), len(shape), ErrShape)
	}
	l := layout{shape: append([]int(nil), shape...), size: 1}
	for i, n := range shape {
		if n < 0 {
			return layout{}, fmt.Errorf("shape %v: dimension %d is negative: %w", shape, i, ErrShape)
		}
		var ok bool
		if l.size, ok = mul64(l.size, int64(n)); !ok {
			return layout{}, fmt.Errorf("shape %v has too many elements: %w", shape, ErrOverflow)
		}
	}
	if _, ok := mul64(l.size, itemsize); !ok {
		return layout{}, fmt.Errorf("shape %v of %d-byte elements: %w", shape, itemsize, ErrOverflow)
	}
	if strides == nil {
		l.strides = cContiguousStrides(shape, itemsize)
	} else {
		l.strides = append([]int64(nil), strides...)
	}
	if l.size == 0 {
		return l, nil
	}
	l.hi = itemsize
	for i, n := range l.shape {
		reach, ok := mul64(int64(n-1), l.strides[i])
		if !ok {
			return layout{}, fmt.Errorf("stride %d on a dimension of %d: %w", l.strides[i], n, ErrOverflow)
		}
		// A negative reach lowers lo, a positive one raises hi.
		var okLo, okHi bool
		l.lo, okLo = add64(l.lo, min(reach, 0))
		l.hi, okHi = add64(l.hi, max(reach, 0))
		if !okLo || !okHi {
			return layout{}, fmt.Errorf("shape %v strides %v: extent %w", shape, strides, ErrOverflow)
		}
	}
	if _, ok := sub64(l.hi, l.lo); !ok {
		return layout{}, fmt.Errorf("shape %v strides %v: extent %w", shape, strides, ErrOverflow)
	}
	return l, nil
}

// within reports whether the bytes the layout touches, with element 0 at
// offset, lie inside [0, size). An empty layout touches nothing.
func (l layout) within(offset, size int64) bool {
	if l.size == 0 {
		return offset >= 0
	}
	lo, okLo := add64(offset, l.lo)
	hi, okHi := add64(offset, l.hi)
	return okLo && okHi && lo >= 0 && hi <= size
}

// cContiguousStrides returns the byte strides of a packed row-major array.
// The caller has checked that the total size fits in int64.
func cContiguousStrides(shape []int, itemsize int64) []int64 {
	s := make([]int64, len(shape))
	acc := itemsize
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		// An axis of length 0 or 1 steps nothing: the axes outside it
		// keep the strides of the others.
		acc *= int64(max(shape[i], 1))
	}
	return s
}

// isCContiguous reports whether strides describe a packed row-major layout.
// Dimensions of size 1 may have any stride; an empty array is contiguous.
func isCContiguous(shape []int, strides []int64, itemsize int64) bool {
	acc := itemsize
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] == 0 {
			return true
		}
		if shape[i] == 1 {
			continue
		}
		if strides[i] != acc {
			return false
		}
		acc *= int64(shape[i])
	}
	return true
}

// isFContiguous reports whether strides describe a packed column-major layout.
func isFContiguous(shape []int, strides []int64, itemsize int64) bool {
	acc := itemsize
	for i := range shape {
		if shape[i] == 0 {
			return true
		}
		if shape[i] == 1 {
			continue
		}
		if strides[i] != acc {
			return false
		}
		acc *= int64(shape[i])
	}
	return true
}

// simplify drops dimensions of size 1 and merges neighbours that are
// contiguous with each other, keeping the C-order traversal of the elements.
// The result describes the same bytes in the same order with fewer dimensions.
func simplify(shape []int, strides []int64) ([]int, []int64) {
	var sh []int
	var st []int64
	for i := range shape {
		if shape[i] == 1 {
			continue
		}
		if k := len(sh) - 1; k >= 0 {
			if span, ok := mul64(int64(shape[i]), strides[i]); ok && st[k] == span {
				sh[k] *= shape[i]
				st[k] = strides[i]
				continue
			}
		}
		sh = append(sh, shape[i])
		st = append(st, strides[i])
	}
	return sh, st
}
