package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/cuarray/cuarray/devarray"
)

// MaxDims is the most axes a kernel's array may have (MAX_DIMS in kernels.cu).
const MaxDims = 8

// layoutBytes is the size of struct Layout in kernels.cu.
const layoutBytes = 8 + 4 + 4 + 8*MaxDims + 8*MaxDims

// layout is an array's shape and byte strides, as kernels see them.
type layout struct {
	n       int64
	shape   []int
	strides []int64
}

// layoutOf returns a's layout. An array of more than MaxDims axes is first
// simplified (its size-1 axes dropped, neighbouring axes that step through
// memory as one merged); one that still has more is an error wrapping
// devarray.ErrShape.
func layoutOf(a *devarray.DevArray) (layout, error) {
	l := layout{n: a.Size(), shape: a.Shape(), strides: a.Strides()}
	if len(l.shape) > MaxDims {
		l = l.simplify()
	}
	if len(l.shape) > MaxDims {
		return layout{}, fmt.Errorf("kernels: %d axes (%d after merging those that step through memory as one): at most %d: %w",
			a.NDim(), len(l.shape), MaxDims, devarray.ErrShape)
	}
	return l, nil
}

// simplify returns l with its size-1 axes dropped and each pair of
// neighbouring axes merged whose outer stride is the inner axis' extent
// (the pair steps through memory as one axis in C order): the same
// elements at the same offsets in the same order, in fewer axes.
func (l layout) simplify() layout {
	shape := make([]int, 0, len(l.shape))
	strides := make([]int64, 0, len(l.shape))
	for i, n := range l.shape {
		if n == 1 {
			continue
		}
		if k := len(shape) - 1; k >= 0 && strides[k] == int64(n)*l.strides[i] {
			shape[k] *= n
			strides[k] = l.strides[i]
			continue
		}
		shape = append(shape, n)
		strides = append(strides, l.strides[i])
	}
	return layout{n: l.n, shape: shape, strides: strides}
}

// wordFor returns the widest word, at most min(item, 8) bytes (the widest
// load of a pack kernel), that the addresses of l's elements through p and
// of the packed side at flat are all multiples of: the item size of the
// pack kernel that moves them without a misaligned load.
func wordFor(l layout, item int64, p, flat devarray.Ptr) int64 {
	w := min(item, 8)
	for w > 1 && (l.misaligned(p, w) || misalignedPtr(flat, w) || item%w != 0) {
		w /= 2
	}
	return w
}

// split returns l, of items of item bytes, as items of w bytes (w divides
// item): a trailing axis of item/w words, w bytes apart.
func (l layout) split(item, w int64) layout {
	k := int(item / w)
	return layout{
		n:       l.n * int64(k),
		shape:   append(append(make([]int, 0, len(l.shape)+1), l.shape...), k),
		strides: append(append(make([]int64, 0, len(l.strides)+1), l.strides...), w),
	}
}

// encode lays the layout out as struct Layout.
func (l layout) encode() []byte {
	b := make([]byte, layoutBytes)
	binary.LittleEndian.PutUint64(b[0:], uint64(l.n))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(l.shape)))
	for i := range l.shape {
		binary.LittleEndian.PutUint64(b[16+8*i:], uint64(l.shape[i]))
		binary.LittleEndian.PutUint64(b[16+8*MaxDims+8*i:], uint64(l.strides[i]))
	}
	return b
}

// offsets calls f with the byte offset of each element in C order.
func (l layout) offsets(f func(i, off int64)) {
	if l.n == 0 {
		return
	}
	idx := make([]int, len(l.shape))
	var off int64
	for i := int64(0); i < l.n; i++ {
		f(i, off)
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			off += l.strides[k]
			if idx[k] < l.shape[k] {
				break
			}
			off -= int64(idx[k]) * l.strides[k]
			idx[k] = 0
		}
	}
}
