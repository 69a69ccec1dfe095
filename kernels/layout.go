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

func layoutOf(a *devarray.DevArray) (layout, error) {
	if a.NDim() > MaxDims {
		return layout{}, fmt.Errorf("kernels: %d axes: at most %d: %w", a.NDim(), MaxDims, devarray.ErrShape)
	}
	return layout{n: a.Size(), shape: a.Shape(), strides: a.Strides()}, nil
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
