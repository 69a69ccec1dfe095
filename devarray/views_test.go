package devarray_test

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// viewStep applies one view operation to the array and to the reference.
type viewStep struct {
	name string
	dev  func(*devarray.DevArray) (*devarray.DevArray, error)
	ref  func(ref) ref
}

func sliceStep(axis, start, stop, step int) viewStep {
	return viewStep{
		fmt.Sprintf("slice(%d,%d,%d,%d)", axis, start, stop, step),
		func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Slice(axis, start, stop, step) },
		func(r ref) ref { return r.slice(axis, start, stop, step) },
	}
}

func indexStep(axis, i int) viewStep {
	return viewStep{fmt.Sprintf("index(%d,%d)", axis, i),
		func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Index(axis, i) },
		func(r ref) ref { return r.index(axis, i) }}
}

func flipStep(axis int) viewStep {
	return viewStep{fmt.Sprintf("flip(%d)", axis),
		func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Flip(axis) },
		func(r ref) ref { return r.flip(axis) }}
}

func permuteStep(axes ...int) viewStep {
	return viewStep{fmt.Sprintf("permute%v", axes),
		func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Permute(axes...) },
		func(r ref) ref { return r.permute(axes) }}
}

func reshapeStep(shape ...int) viewStep {
	return viewStep{fmt.Sprintf("reshape%v", shape),
		func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Reshape(shape...) },
		func(r ref) ref { return r.reshape(shape) }}
}

func broadcastStep(shape ...int) viewStep {
	return viewStep{fmt.Sprintf("broadcast%v", shape),
		func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Broadcast(shape...) },
		func(r ref) ref { return r.broadcast(shape) }}
}

var transposeStep = viewStep{"transpose",
	func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Transpose() },
	func(r ref) ref {
		axes := make([]int, len(r.shape))
		for i := range axes {
			axes[i] = len(axes) - 1 - i
		}
		return r.permute(axes)
	}}

func TestViewsMatchReference(t *testing.T) {
	dev := newDev(t)
	tests := []struct {
		name  string
		shape []int
		steps []viewStep
		cont  bool // the final view is C-contiguous
	}{
		{"row slice", []int{8, 6}, []viewStep{sliceStep(0, 2, 5, 1)}, true},
		{"column slice", []int{8, 6}, []viewStep{sliceStep(1, 1, 4, 1)}, false},
		{"stepped slice", []int{9, 7}, []viewStep{sliceStep(0, 1, 9, 3), sliceStep(1, 0, 7, 2)}, false},
		{"empty slice", []int{4, 5}, []viewStep{sliceStep(1, 5, 5, 1)}, true},
		{"index", []int{3, 4, 5}, []viewStep{indexStep(1, 2)}, false},
		{"index leading", []int{3, 4, 5}, []viewStep{indexStep(0, 1)}, true},
		{"flip", []int{5, 4}, []viewStep{flipStep(0)}, false},
		{"flip inner", []int{5, 4}, []viewStep{flipStep(1)}, false},
		{"flip then slice", []int{6, 6}, []viewStep{flipStep(1), sliceStep(1, 1, 6, 2)}, false},
		{"transpose", []int{4, 7}, []viewStep{transposeStep}, false},
		{"permute 3d", []int{2, 3, 4}, []viewStep{permuteStep(2, 0, 1)}, false},
		{"reshape contiguous", []int{4, 6}, []viewStep{reshapeStep(2, 3, 4)}, true},
		{"reshape inferred", []int{4, 6}, []viewStep{reshapeStep(-1, 8)}, true},
		{"reshape row slice", []int{6, 4}, []viewStep{sliceStep(0, 1, 5, 1), reshapeStep(2, 8)}, true},
		{"reshape keeps strided outer", []int{6, 4}, []viewStep{sliceStep(0, 0, 6, 2), reshapeStep(3, 2, 2)}, false},
		{"reshape with unit axes", []int{1, 6, 1}, []viewStep{reshapeStep(2, 1, 3)}, true},
		{"reshape split of permuted", []int{4, 6}, []viewStep{transposeStep, reshapeStep(2, 3, 4)}, false},
		{"broadcast row", []int{1, 5}, []viewStep{broadcastStep(3, 5)}, false},
		{"broadcast new axes", []int{5}, []viewStep{broadcastStep(2, 3, 5)}, false},
		{"broadcast of slice", []int{4, 5}, []viewStep{indexStep(0, 2), broadcastStep(3, 5)}, false},
		{"chain", []int{6, 5, 4}, []viewStep{sliceStep(0, 1, 6, 2), permuteStep(2, 0, 1), flipStep(1), indexStep(2, 3)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 1
			for _, s := range tt.shape {
				n *= s
			}
			host := randomFloat32(n)
			a, err := devarray.FromHost(dev, host, tt.shape...)
			require.NoError(t, err)
			defer a.Free()

			v, r := a, identity(tt.shape)
			scope := dev.Ledger().Push(tt.name)
			for _, st := range tt.steps {
				v, err = st.dev(v)
				require.NoError(t, err, st.name)
				r = st.ref(r)
			}
			snap, err := scope.Pop()
			require.NoError(t, err)
			assert.Zero(t, snap.Allocations(), "views allocate nothing")
			assert.Zero(t, snap.Copied(), "views copy nothing")

			assert.Equal(t, r.shape, v.Shape())
			assert.Equal(t, tt.cont, v.IsContiguous(), "contiguity of %v strides %v", v.Shape(), v.Strides())
			assert.True(t, v.IsView())

			before := dev.Ledger().Snapshot()
			got, err := devarray.ToHost[float32](v)
			require.NoError(t, err)
			assert.Equal(t, r.expect(host, tt.shape), got)
			moved := accounting.Diff(before, dev.Ledger().Snapshot()).CopyTotal(accounting.DtoH)
			assert.Equal(t, v.NBytes(), moved.Bytes, "only the view's elements cross to the host")

			lo, hi := v.Extent()
			if v.Size() > 0 {
				base := int64(a.Ptr())
				assert.GreaterOrEqual(t, int64(v.Ptr())+lo, base, "extent starts inside the allocation")
				assert.LessOrEqual(t, int64(v.Ptr())+hi, base+a.NBytes(), "extent ends inside the allocation")
			}
		})
	}
}

func TestWriteThroughStridedView(t *testing.T) {
	dev := newDev(t)
	host := randomFloat32(6 * 8)
	a, err := devarray.FromHost(dev, host, 6, 8)
	require.NoError(t, err)
	defer a.Free()
	v, err := a.Slice(1, 1, 8, 3) // columns 1, 4, 7
	require.NoError(t, err)
	v, err = v.Flip(0)
	require.NoError(t, err)

	patch := randomFloat32(6 * 3)
	require.NoError(t, v.CopyFrom(devarray.AsBytes(patch)))
	want := append([]float32(nil), host...)
	for i := range 6 {
		for j := range 3 {
			want[(5-i)*8+1+3*j] = patch[i*3+j]
		}
	}
	got, err := devarray.ToHost[float32](a)
	require.NoError(t, err)
	assert.Equal(t, want, got, "only the view's elements changed")
}

func TestViewErrors(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.FromHost(dev, randomFloat32(24), 2, 3, 4)
	require.NoError(t, err)
	defer a.Free()
	tr, err := a.Transpose()
	require.NoError(t, err)

	tests := []struct {
		name string
		op   func() (*devarray.DevArray, error)
		want error
	}{
		{"slice axis", func() (*devarray.DevArray, error) { return a.Slice(3, 0, 1) }, devarray.ErrShape},
		{"slice negative axis", func() (*devarray.DevArray, error) { return a.Slice(-1, 0, 1) }, devarray.ErrShape},
		{"slice stop past end", func() (*devarray.DevArray, error) { return a.Slice(0, 0, 3) }, devarray.ErrShape},
		{"slice start after stop", func() (*devarray.DevArray, error) { return a.Slice(1, 2, 1) }, devarray.ErrShape},
		{"slice negative start past its stop", func() (*devarray.DevArray, error) { return a.Slice(1, -1, 1) }, devarray.ErrShape},
		{"slice start before the axis", func() (*devarray.DevArray, error) { return a.Slice(0, -3, 2) }, devarray.ErrShape},
		{"index before the axis", func() (*devarray.DevArray, error) { return a.Index(0, -3) }, devarray.ErrShape},
		{"slice zero step", func() (*devarray.DevArray, error) { return a.Slice(1, 0, 3, 0) }, devarray.ErrShape},
		{"slice two steps", func() (*devarray.DevArray, error) { return a.Slice(1, 0, 3, 1, 1) }, devarray.ErrShape},
		{"slice step overflow", func() (*devarray.DevArray, error) { return a.Slice(2, 0, 1, math.MaxInt) }, devarray.ErrOverflow},
		{"index out of range", func() (*devarray.DevArray, error) { return a.Index(2, 4) }, devarray.ErrShape},
		{"index axis", func() (*devarray.DevArray, error) { return a.Index(5, 0) }, devarray.ErrShape},
		{"flip axis", func() (*devarray.DevArray, error) { return a.Flip(3) }, devarray.ErrShape},
		{"permute short", func() (*devarray.DevArray, error) { return a.Permute(0, 1) }, devarray.ErrShape},
		{"permute repeat", func() (*devarray.DevArray, error) { return a.Permute(0, 0, 1) }, devarray.ErrShape},
		{"permute range", func() (*devarray.DevArray, error) { return a.Permute(0, 1, 3) }, devarray.ErrShape},
		{"squeeze non-unit", func() (*devarray.DevArray, error) { return a.Squeeze(1) }, devarray.ErrShape},
		{"squeeze axis", func() (*devarray.DevArray, error) { return a.Squeeze(7) }, devarray.ErrShape},
		{"expand axis", func() (*devarray.DevArray, error) { return a.ExpandDims(4) }, devarray.ErrShape},
		{"broadcast fewer dims", func() (*devarray.DevArray, error) { return a.Broadcast(3, 4) }, devarray.ErrShape},
		{"broadcast mismatch", func() (*devarray.DevArray, error) { return a.Broadcast(2, 5, 4) }, devarray.ErrShape},
		{"broadcast negative", func() (*devarray.DevArray, error) { return a.Broadcast(-1, 2, 3, 4) }, devarray.ErrShape},
		{"reshape count", func() (*devarray.DevArray, error) { return a.Reshape(5, 5) }, devarray.ErrShape},
		{"reshape two -1", func() (*devarray.DevArray, error) { return a.Reshape(-1, -1) }, devarray.ErrShape},
		{"reshape -2", func() (*devarray.DevArray, error) { return a.Reshape(-2, 12) }, devarray.ErrShape},
		{"reshape infer indivisible", func() (*devarray.DevArray, error) { return a.Reshape(-1, 5) }, devarray.ErrShape},
		{"reshape infer with zero", func() (*devarray.DevArray, error) { return a.Reshape(-1, 0) }, devarray.ErrShape},
		{"reshape overflow", func() (*devarray.DevArray, error) { return a.Reshape(math.MaxInt, 4) }, devarray.ErrOverflow},
		{"flatten a transpose", func() (*devarray.DevArray, error) { return tr.Reshape(24) }, devarray.ErrNotViewable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.op()
			assert.Nil(t, v)
			assert.ErrorIs(t, err, tt.want)
		})
	}
	_, err = tr.Reshape(24)
	assert.Contains(t, err.Error(), "needs a copy, and views never copy")
	// The messages name the bad input and what was allowed.
	_, err = a.Index(2, 4)
	assert.Contains(t, err.Error(), "4 out of range [-4, 4) on axis 2")
	_, err = a.Permute(0, 1, 3)
	assert.Contains(t, err.Error(), "[0 1 3] is not a permutation of 0..2")
	_, err = a.Permute(2, 0, 2)
	assert.Contains(t, err.Error(), "[2 0 2] is not a permutation of 0..2")
}

func TestSqueezeExpandDims(t *testing.T) {
	dev := newDev(t)
	host := randomFloat32(12)
	a, err := devarray.FromHost(dev, host, 1, 3, 1, 4)
	require.NoError(t, err)
	defer a.Free()

	s, err := a.Squeeze()
	require.NoError(t, err)
	assert.Equal(t, []int{3, 4}, s.Shape())
	s1, err := a.Squeeze(2)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 3, 4}, s1.Shape())

	for axis := 0; axis <= 2; axis++ {
		e, err := s.ExpandDims(axis)
		require.NoError(t, err)
		want := []int{3, 4}
		want = append(want[:axis:axis], append([]int{1}, want[axis:]...)...)
		assert.Equal(t, want, e.Shape())
		assert.True(t, e.IsContiguous(), "a unit axis keeps contiguity")
		got, err := devarray.ToHost[float32](e)
		require.NoError(t, err)
		assert.Equal(t, host, got)
	}
}

func TestBroadcastIsReadOnly(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.FromHost(dev, randomFloat32(4), 1, 4)
	require.NoError(t, err)
	defer a.Free()
	b, err := a.Broadcast(3, 4)
	require.NoError(t, err)
	assert.True(t, b.ReadOnly())
	assert.Equal(t, []int64{0, 4}, b.Strides())
	assert.ErrorIs(t, b.CopyFrom(make([]byte, b.NBytes())), devarray.ErrReadOnly)
	ro, err := a.AsReadOnly()
	require.NoError(t, err)
	assert.ErrorIs(t, ro.CopyFrom(make([]byte, 16)), devarray.ErrReadOnly)
	s, err := ro.Slice(1, 0, 2)
	require.NoError(t, err)
	assert.True(t, s.ReadOnly(), "views of a read-only array are read-only")
}

func TestContiguity(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.Empty(dev, devarray.Float64, 3, 4, 5)
	require.NoError(t, err)
	defer a.Free()
	assert.True(t, a.IsContiguous())
	assert.False(t, a.IsFContiguous())
	tr, err := a.Transpose()
	require.NoError(t, err)
	assert.False(t, tr.IsContiguous())
	assert.True(t, tr.IsFContiguous(), "the transpose of a C array is Fortran-ordered")
	assert.Equal(t, []int64{8, 40, 160}, tr.Strides())

	v, err := a.Index(2, 0)
	require.NoError(t, err)
	assert.False(t, v.IsContiguous())
	assert.False(t, v.IsFContiguous())

	one, err := devarray.Empty(dev, devarray.Int8, 1, 1)
	require.NoError(t, err)
	defer one.Free()
	assert.True(t, one.IsContiguous())
	assert.True(t, one.IsFContiguous(), "a single element is both")
}

func TestByteOffsetAndExtent(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.Empty(dev, devarray.Int32, 4, 5)
	require.NoError(t, err)
	defer a.Free()
	off, err := a.ByteOffset(2, 3)
	require.NoError(t, err)
	assert.Equal(t, int64((2*5+3)*4), off)
	_, err = a.ByteOffset(4, 0)
	assert.ErrorIs(t, err, devarray.ErrShape)
	_, err = a.ByteOffset(1)
	assert.ErrorIs(t, err, devarray.ErrShape)

	lo, hi := a.Extent()
	assert.Equal(t, []int64{0, 80}, []int64{lo, hi})
	f, err := a.Flip(0)
	require.NoError(t, err)
	lo, hi = f.Extent()
	assert.Equal(t, []int64{-60, 20}, []int64{lo, hi}, "a flipped axis reaches below element 0")
	assert.Equal(t, a.Ptr()+60, f.Ptr())
	e, err := a.Slice(0, 2, 2)
	require.NoError(t, err)
	lo, hi = e.Extent()
	assert.Equal(t, []int64{0, 0}, []int64{lo, hi}, "empty arrays touch nothing")
	assert.Zero(t, e.NBytes())
	got, err := devarray.ToHost[int32](e)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestMetadataAccessors(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.Zeros(dev, devarray.Complex64, 2, 3)
	require.NoError(t, err)
	defer a.Free()
	assert.Equal(t, 2, a.NDim())
	assert.Equal(t, int64(6), a.Size())
	assert.Equal(t, int64(48), a.NBytes())
	assert.Equal(t, devarray.Complex64, a.DType())
	assert.Equal(t, dev.DeviceID(), a.Device())
	assert.Equal(t, devarray.Backend(dev), a.Backend())
	assert.True(t, a.Owned())
	assert.False(t, a.IsView())
	assert.False(t, a.ReadOnly())
	assert.Contains(t, a.String(), "DevArray(complex64 [2 3] on "+dev.DeviceID().String(), "the test device's name")
	assert.Contains(t, a.String(), "owned")

	sh := a.Shape()
	sh[0] = 99
	st := a.Strides()
	st[0] = 99
	assert.Equal(t, []int{2, 3}, a.Shape(), "Shape returns a copy")
	assert.Equal(t, []int64{24, 8}, a.Strides(), "Strides returns a copy")
	v, err := a.Slice(0, 0, 1)
	require.NoError(t, err)
	assert.Contains(t, v.String(), "view")

	d, err := a.Descriptor()
	require.NoError(t, err)
	assert.Equal(t, devarray.Descriptor{Ptr: a.Ptr(), Shape: []int{2, 3}, Strides: []int64{24, 8},
		DType: devarray.Complex64, Device: dev.DeviceID()}, d)
	got, err := devarray.ToHost[complex64](a)
	require.NoError(t, err)
	assert.Equal(t, make([]complex64, 6), got, "Zeros zeroes")
	assert.Equal(t, int64(1), dev.Ledger().Snapshot().Memsets.Count)
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{devarray.ErrFreed, devarray.ErrNotOwner, devarray.ErrShape, devarray.ErrOverflow, devarray.ErrNotViewable,
		devarray.ErrDType, devarray.ErrDevice, devarray.ErrReadOnly, devarray.ErrNoBackend, devarray.ErrHostSize, devarray.ErrBounds}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

// Every element of a random view (flipped, stepped, permuted) is where the
// reference model says: Ptr()+ByteOffset(idx) is the address of the
// element of the original C-contiguous array it reads, index 0 included;
// Uintptr and MemSize span exactly the lowest to one past the highest byte
// of those elements (gorgonia's Memory), and an index outside its axis is
// ErrShape.
func TestByteOffsetsOfRandomViews(t *testing.T) {
	const item = 4
	for range 50 {
		shape := []int{1 + rand.IntN(6), 1 + rand.IntN(6), 1 + rand.IntN(6)}
		a, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: randomBase(), Shape: shape, DType: devarray.Float32,
			Device: devarray.DeviceID{Kind: devarray.CUDA}})
		require.NoError(t, err)
		v, r := a, identity(shape)
		for ax := range shape {
			if rand.IntN(2) == 0 {
				v, err = v.Flip(ax)
				require.NoError(t, err)
				r = r.flip(ax)
			}
			if n := shape[ax]; n > 1 {
				start, step := rand.IntN(n-1), 1+rand.IntN(2)
				v, err = v.Slice(ax, start, n, step)
				require.NoError(t, err)
				r = r.slice(ax, start, n, step)
			}
		}
		perm := rand.Perm(len(shape))
		v, err = v.Permute(perm...)
		require.NoError(t, err)
		r = r.permute(perm)
		require.Equal(t, r.shape, v.Shape())

		lowest, highest := uintptr(math.MaxUint64), uintptr(0)
		for f := range int(v.Size()) {
			idx := unflatten(f, r.shape)
			off, err := v.ByteOffset(idx...)
			require.NoError(t, err, "index %v of %v", idx, r.shape)
			addr := uintptr(v.Ptr()) + uintptr(off)
			assert.Equal(t, uintptr(a.Ptr())+uintptr(flatten(r.src(idx), shape)*item), addr, "index %v", idx)
			lowest, highest = min(lowest, addr), max(highest, addr+item)
		}
		assert.Equal(t, lowest, v.Uintptr(), "the lowest byte of strides %v", v.Strides())
		assert.Equal(t, highest-lowest, v.MemSize(), "the span of strides %v", v.Strides())
		for ax, n := range r.shape {
			for _, bad := range []int{-1, n, n + rand.IntN(5)} {
				idx := make([]int, len(r.shape))
				idx[ax] = bad
				_, err := v.ByteOffset(idx...)
				assert.ErrorIs(t, err, devarray.ErrShape, "index %v of %v", idx, r.shape)
			}
		}
	}
}

// Views with an empty axis are valid wherever they sit: the empty slice
// at either end of a flipped axis, a flipped empty axis, a broadcast to a
// length of 0 (as NumPy allows), and views of those, all with no elements
// and no bytes.
func TestViewsOfEmptyAxes(t *testing.T) {
	dev := newDev(t)
	rows, cols := 2+rand.IntN(10), 2+rand.IntN(10)
	a, err := devarray.FromHost(dev, randomFloat32(rows*cols), rows, cols)
	require.NoError(t, err)
	defer a.Free()
	empty, err := a.Slice(0, rows, rows)
	require.NoError(t, err)
	tests := []struct {
		name string
		view func() (*devarray.DevArray, error)
	}{
		{"empty slice at the end", func() (*devarray.DevArray, error) { return a.Slice(1, cols, cols) }},
		{"empty slice at the end of a flipped axis", func() (*devarray.DevArray, error) {
			f, err := a.Flip(0)
			if err != nil {
				return nil, err
			}
			return f.Slice(0, rows, rows)
		}},
		{"empty slice at the start of a flipped axis", func() (*devarray.DevArray, error) {
			f, err := a.Flip(1)
			if err != nil {
				return nil, err
			}
			return f.Slice(1, 0, 0)
		}},
		{"flipped empty axis", func() (*devarray.DevArray, error) { return empty.Flip(0) }},
		{"flipped empty axis, then its other axis flipped", func() (*devarray.DevArray, error) {
			f, err := empty.Flip(0)
			if err != nil {
				return nil, err
			}
			return f.Flip(1)
		}},
		{"empty slice of an empty axis", func() (*devarray.DevArray, error) { return empty.Slice(0, 0, 0) }},
		{"a new leading axis of length 0", func() (*devarray.DevArray, error) { return a.Broadcast(0, rows, cols) }},
		{"a length-1 axis broadcast to length 0", func() (*devarray.DevArray, error) {
			row, err := a.Slice(0, 0, 1)
			if err != nil {
				return nil, err
			}
			return row.Broadcast(0, cols)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.view()
			require.NoError(t, err)
			assert.Zero(t, v.Size())
			assert.Zero(t, v.MemSize())
			got, err := devarray.ToHost[float32](v)
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
}

// An array with no elements reshapes, as in NumPy, to any shape whose
// lengths multiply to 0, zero lengths included and a -1 inferred beside
// non-zero lengths; a -1 beside a zero length cannot be inferred.
func TestReshapeEmpty(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.Empty(dev, devarray.Float32, 0, 5)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	for _, tc := range []struct {
		to, want []int
		err      error
	}{
		{[]int{5, 0}, []int{5, 0}, nil},
		{[]int{0}, []int{0}, nil},
		{[]int{3, 0, 7}, []int{3, 0, 7}, nil},
		{[]int{-1, 5}, []int{0, 5}, nil},
		{[]int{2, -1, 3}, []int{2, 0, 3}, nil},
		{[]int{-1, 0}, nil, devarray.ErrShape},
		{[]int{5, 1}, nil, devarray.ErrShape},
		{[]int{0, -2}, nil, devarray.ErrShape},
	} {
		t.Run(fmt.Sprint(tc.to), func(t *testing.T) {
			v, err := a.Reshape(tc.to...)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Nil(t, v)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, v.Shape())
			assert.Zero(t, v.Size())
		})
	}
}
