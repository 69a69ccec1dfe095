package devarray

import "fmt"

// derive makes a view of a's memory with a new element-0 offset and layout.
// It allocates no device memory and copies nothing.
func (a *DevArray) derive(op string, offset int64, shape []int, strides []int64, readonly bool) (*DevArray, error) {
	if err := a.Err(); err != nil {
		return nil, fmt.Errorf("devarray: %s: %w", op, err)
	}
	lay, err := newLayout(shape, strides, a.dtype.Size())
	if err != nil {
		return nil, fmt.Errorf("devarray: %s: %w", op, err)
	}
	if a.buf.size >= 0 && !lay.within(offset, a.buf.size) {
		return nil, fmt.Errorf("devarray: %s: bytes [%d, %d) reach outside the %d-byte allocation: %w",
			op, offset+lay.lo, offset+lay.hi, a.buf.size, ErrBounds)
	}
	return &DevArray{buf: a.buf, offset: offset, lay: lay, dtype: a.dtype, readonly: readonly, view: true}, nil
}

func (a *DevArray) checkAxis(op string, axis int) error {
	if err := a.check(); err != nil {
		return fmt.Errorf("devarray: %s: %w", op, err)
	}
	if axis < 0 || axis >= len(a.lay.shape) {
		return fmt.Errorf("devarray: %s: axis %d out of range for %d dimensions: %w", op, axis, len(a.lay.shape), ErrShape)
	}
	return nil
}

// Slice returns the view of elements start, start+step, ... below stop on
// one axis (step defaults to 1 and must be positive; use Flip to reverse).
// As in Python, a negative start or stop counts from the end of the axis:
// Slice(0, -2, n) is the last two elements. Unlike Python, which clamps,
// a start or stop outside [-n, n] for an axis of length n, or a stop
// before the start, is an error (ErrShape).
func (a *DevArray) Slice(axis, start, stop int, step ...int) (*DevArray, error) {
	if err := a.checkAxis("slice", axis); err != nil {
		return nil, err
	}
	st := 1
	switch len(step) {
	case 0:
	case 1:
		st = step[0]
	default:
		return nil, fmt.Errorf("devarray: slice: at most one step, got %d: %w", len(step), ErrShape)
	}
	n := a.lay.shape[axis]
	if st < 1 {
		return nil, fmt.Errorf("devarray: slice: step %d must be positive (use Flip to reverse an axis): %w", st, ErrShape)
	}
	if start < -n || start > n || stop < -n || stop > n {
		return nil, fmt.Errorf("devarray: slice: [%d:%d] out of range for axis %d of length %d (start and stop lie in [-%d, %d]; negative ones count from the end): %w",
			start, stop, axis, n, n, n, ErrShape)
	}
	from, to := fromEnd(start, n), fromEnd(stop, n)
	if to < from {
		return nil, fmt.Errorf("devarray: slice: [%d:%d] on axis %d of length %d ends at %d, before its start %d: %w", start, stop, axis, n, to, from, ErrShape)
	}
	start, stop = from, to
	shape, strides := a.Shape(), a.Strides()
	shape[axis] = (stop - start + st - 1) / st
	offset := a.offset
	if shape[axis] > 0 {
		offset += int64(start) * strides[axis]
	}
	stride, ok := mul64(strides[axis], int64(st))
	if !ok {
		return nil, fmt.Errorf("devarray: slice: step %d times stride %d: %w", st, strides[axis], ErrOverflow)
	}
	strides[axis] = stride
	return a.derive("slice", offset, shape, strides, a.readonly)
}

// Index returns the view at position i of one axis, with that axis removed.
// As in Python, a negative i counts from the end: Index(0, -1) is the last
// element of axis 0. i must lie in [-n, n) for an axis of length n.
func (a *DevArray) Index(axis, i int) (*DevArray, error) {
	if err := a.checkAxis("index", axis); err != nil {
		return nil, err
	}
	n := a.lay.shape[axis]
	if i < -n || i >= n {
		return nil, fmt.Errorf("devarray: index: %d out of range [-%d, %d) on axis %d of length %d (negative indices count from the end): %w", i, n, n, axis, n, ErrShape)
	}
	i = fromEnd(i, n)
	offset := a.offset + int64(i)*a.lay.strides[axis]
	shape := append(a.Shape()[:axis:axis], a.lay.shape[axis+1:]...)
	strides := append(a.Strides()[:axis:axis], a.lay.strides[axis+1:]...)
	return a.derive("index", offset, shape, strides, a.readonly)
}

// fromEnd is i counted from the end of an axis of length n when it is
// negative, as Python counts: -1 is n-1.
func fromEnd(i, n int) int {
	if i < 0 {
		return i + n
	}
	return i
}

// Flip returns the view with one axis reversed (a negative stride).
func (a *DevArray) Flip(axis int) (*DevArray, error) {
	if err := a.checkAxis("flip", axis); err != nil {
		return nil, err
	}
	shape, strides := a.Shape(), a.Strides()
	offset := a.offset
	if shape[axis] > 0 {
		offset += int64(shape[axis]-1) * strides[axis]
	}
	strides[axis] = -strides[axis]
	return a.derive("flip", offset, shape, strides, a.readonly)
}

// Permute returns the view with axes reordered: axis i of the result is
// axis axes[i] of a. axes must be a permutation of 0..NDim()-1.
func (a *DevArray) Permute(axes ...int) (*DevArray, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: permute: %w", err)
	}
	nd := len(a.lay.shape)
	if len(axes) != nd {
		return nil, fmt.Errorf("devarray: permute: %d axes for %d dimensions: %w", len(axes), nd, ErrShape)
	}
	seen := make([]bool, nd)
	shape, strides := make([]int, nd), make([]int64, nd)
	for i, ax := range axes {
		if ax < 0 || ax >= nd || seen[ax] {
			return nil, fmt.Errorf("devarray: permute: %v is not a permutation of 0..%d: %w", axes, nd-1, ErrShape)
		}
		seen[ax] = true
		shape[i], strides[i] = a.lay.shape[ax], a.lay.strides[ax]
	}
	return a.derive("permute", a.offset, shape, strides, a.readonly)
}

// Transpose returns the view with the order of all axes reversed.
func (a *DevArray) Transpose() (*DevArray, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: transpose: %w", err)
	}
	nd := len(a.lay.shape)
	axes := make([]int, nd)
	for i := range axes {
		axes[i] = nd - 1 - i
	}
	return a.Permute(axes...)
}

// Squeeze returns the view without the given axes, each of which must have
// length 1; with no axes it removes every axis of length 1.
func (a *DevArray) Squeeze(axes ...int) (*DevArray, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: squeeze: %w", err)
	}
	drop := make([]bool, len(a.lay.shape))
	if len(axes) == 0 {
		for i, n := range a.lay.shape {
			drop[i] = n == 1
		}
	}
	for _, ax := range axes {
		if err := a.checkAxis("squeeze", ax); err != nil {
			return nil, err
		}
		if a.lay.shape[ax] != 1 {
			return nil, fmt.Errorf("devarray: squeeze: axis %d has length %d, not 1: %w", ax, a.lay.shape[ax], ErrShape)
		}
		drop[ax] = true
	}
	var shape []int
	var strides []int64
	for i := range a.lay.shape {
		if !drop[i] {
			shape = append(shape, a.lay.shape[i])
			strides = append(strides, a.lay.strides[i])
		}
	}
	return a.derive("squeeze", a.offset, shape, strides, a.readonly)
}

// ExpandDims returns the view with a new axis of length 1 inserted before
// position axis (0 <= axis <= NDim()).
func (a *DevArray) ExpandDims(axis int) (*DevArray, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: expand dims: %w", err)
	}
	nd := len(a.lay.shape)
	if axis < 0 || axis > nd {
		return nil, fmt.Errorf("devarray: expand dims: axis %d out of range [0, %d]: %w", axis, nd, ErrShape)
	}
	stride := a.dtype.Size()
	if axis < nd {
		var ok bool
		if stride, ok = mul64(int64(a.lay.shape[axis]), a.lay.strides[axis]); !ok {
			stride = a.lay.strides[axis]
		}
	}
	shape := append(append(a.Shape()[:axis:axis], 1), a.lay.shape[axis:]...)
	strides := append(append(a.Strides()[:axis:axis], stride), a.lay.strides[axis:]...)
	return a.derive("expand dims", a.offset, shape, strides, a.readonly)
}

// Broadcast returns a read-only view with the given shape, following NumPy's
// rules: shapes align at the last axis, and an axis of length 1 (or a missing
// leading axis) repeats with stride 0. It is read-only because its elements alias.
func (a *DevArray) Broadcast(shape ...int) (*DevArray, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: broadcast: %w", err)
	}
	nd, od := len(shape), len(a.lay.shape)
	if nd < od {
		return nil, fmt.Errorf("devarray: broadcast %v to %v: fewer dimensions: %w", a.lay.shape, shape, ErrShape)
	}
	strides := make([]int64, nd)
	for i := range shape {
		j := i - (nd - od)
		if shape[i] < 0 {
			return nil, fmt.Errorf("devarray: broadcast to %v: negative length: %w", shape, ErrShape)
		}
		switch {
		case j < 0:
			strides[i] = 0
		case a.lay.shape[j] == shape[i]:
			strides[i] = a.lay.strides[j]
		case a.lay.shape[j] == 1:
			strides[i] = 0
		default:
			return nil, fmt.Errorf("devarray: broadcast %v to %v: axis %d has length %d, want 1 or %d: %w",
				a.lay.shape, shape, j, a.lay.shape[j], shape[i], ErrShape)
		}
	}
	return a.derive("broadcast", a.offset, shape, strides, true)
}

// AsReadOnly returns a view of the same memory that refuses writes.
func (a *DevArray) AsReadOnly() (*DevArray, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: read-only view: %w", err)
	}
	return a.derive("read-only view", a.offset, a.lay.shape, a.lay.strides, true)
}

// Reshape returns a view with a new shape of the same number of elements,
// read in C order. One dimension may be -1 and is then inferred. When the
// strides do not allow the new shape without a copy (for example a
// transposed array made flat), it returns an error wrapping ErrNotViewable.
func (a *DevArray) Reshape(shape ...int) (*DevArray, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: reshape: %w", err)
	}
	shape, err := a.inferShape(shape)
	if err != nil {
		return nil, err
	}
	strides, ok := reshapeStrides(a.lay.shape, a.lay.strides, shape, a.dtype.Size())
	if !ok {
		return nil, fmt.Errorf("devarray: reshape %v (strides %v) to %v needs a copy, and views never copy: %w",
			a.lay.shape, a.lay.strides, shape, ErrNotViewable)
	}
	return a.derive("reshape", a.offset, shape, strides, a.readonly)
}

func (a *DevArray) inferShape(shape []int) ([]int, error) {
	shape = append([]int(nil), shape...)
	infer, known := -1, int64(1)
	for i, n := range shape {
		switch {
		case n == -1 && infer < 0:
			infer = i
		case n < 0:
			return nil, fmt.Errorf("devarray: reshape to %v: only one -1 and no other negative length: %w", shape, ErrShape)
		default:
			var ok bool
			if known, ok = mul64(known, int64(n)); !ok {
				return nil, fmt.Errorf("devarray: reshape to %v: %w", shape, ErrOverflow)
			}
		}
	}
	if infer >= 0 {
		if known == 0 || a.lay.size%known != 0 {
			return nil, fmt.Errorf("devarray: reshape %d elements to %v: cannot infer the -1: %w", a.lay.size, shape, ErrShape)
		}
		shape[infer] = int(a.lay.size / known)
		known = a.lay.size
	}
	if known != a.lay.size {
		return nil, fmt.Errorf("devarray: reshape %v (%d elements) to %v (%d elements): %w", a.lay.shape, a.lay.size, shape, known, ErrShape)
	}
	return shape, nil
}

// reshapeStrides finds strides that read the elements of (shape, strides) in
// C order as newShape, without a copy, after NumPy's _attempt_nocopy_reshape.
func reshapeStrides(shape []int, strides []int64, newShape []int, itemsize int64) ([]int64, bool) {
	var size int64 = 1
	for _, n := range newShape {
		size *= int64(n)
	}
	if size == 0 {
		return cContiguousStrides(newShape, itemsize), true
	}
	// Work without the length-1 axes of the old shape; they hold no stride information.
	var os []int
	var ost []int64
	for i, n := range shape {
		if n != 1 {
			os, ost = append(os, n), append(ost, strides[i])
		}
	}
	ns := newShape
	nst := make([]int64, len(ns))
	oi, oj, ni, nj := 0, 1, 0, 1
	for ni < len(ns) && oi < len(os) {
		np, op := int64(ns[ni]), int64(os[oi])
		for np != op {
			if np < op {
				np *= int64(ns[nj])
				nj++
			} else {
				op *= int64(os[oj])
				oj++
			}
		}
		// The old axes oi..oj-1 must be contiguous with each other.
		for ok := oi; ok < oj-1; ok++ {
			if ost[ok] != int64(os[ok+1])*ost[ok+1] {
				return nil, false
			}
		}
		nst[nj-1] = ost[oj-1]
		for nk := nj - 1; nk > ni; nk-- {
			nst[nk-1] = nst[nk] * int64(ns[nk])
		}
		ni, nj = nj, nj+1
		oi, oj = oj, oj+1
	}
	// Trailing new axes have length 1: give them a C-style stride.
	last := itemsize
	if ni > 0 {
		last = nst[ni-1]
	}
	for nk := ni; nk < len(ns); nk++ {
		nst[nk] = last
	}
	return nst, true
}
