package devarray

import "fmt"

// Block is one pitched 2-D piece of an array's elements: Height rows of
// Width bytes, row i starting Offset + i*Pitch bytes from element 0. Its
// bytes are Width*Height bytes of the packed C-order stream of elements,
// starting at byte Packed.
type Block struct {
	Offset, Packed       int64
	Width, Height, Pitch int64
}

// Blocks calls f, in C order, with the fewest pitched 2-D blocks that
// cover the elements of a layout (byte strides, any sign), stopping at the
// first error. After merging the axes that are contiguous with each other,
// a row is the innermost run of contiguous bytes (one element when the
// innermost stride is not the item size); the next axis out stacks rows
// into a block when its stride is a valid pitch (at least the row width);
// every remaining outer index is one more block. A layout with no elements
// has no blocks.
//
// The layout is checked first, as an array's is (nil strides mean
// C-contiguous): mismatched lengths, negative lengths or a size that is
// not positive are ErrShape, sizes past int64 ErrOverflow, a nil f ErrNil.
func Blocks(shape []int, strides []int64, itemsize int64, f func(Block) error) error {
	if f == nil {
		return fmt.Errorf("devarray: blocks: no function: %w", ErrNil)
	}
	if itemsize <= 0 {
		return fmt.Errorf("devarray: blocks: item size %d: %w", itemsize, ErrShape)
	}
	lay, err := newLayout(shape, strides, itemsize)
	if err != nil {
		return fmt.Errorf("devarray: blocks: %w", err)
	}
	shape, strides = lay.shape, lay.strides
	for _, n := range shape {
		if n == 0 {
			return nil
		}
	}
	shape, strides = simplify(shape, strides)
	width := itemsize
	if n := len(shape); n > 0 && strides[n-1] == itemsize {
		width = int64(shape[n-1]) * itemsize
		shape, strides = shape[:n-1], strides[:n-1]
	}
	height, pitch := int64(1), width
	if n := len(shape); n > 0 && strides[n-1] >= width {
		height, pitch = int64(shape[n-1]), strides[n-1]
		shape, strides = shape[:n-1], strides[:n-1]
	}
	size := width * height
	idx := make([]int, len(shape))
	var off, packed int64
	for {
		if err := f(Block{Offset: off, Packed: packed, Width: width, Height: height, Pitch: pitch}); err != nil {
			return err
		}
		packed += size
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			off += strides[i]
			if idx[i] < shape[i] {
				break
			}
			off -= int64(idx[i]) * strides[i]
			idx[i] = 0
		}
		if i < 0 {
			return nil
		}
	}
}
