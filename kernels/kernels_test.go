package kernels_test

import (
	"encoding/binary"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
)

func setup(t *testing.T) (device.Device, *kernels.Kernels) {
	t.Helper()
	dev := testdev.Open(t)
	k, err := kernels.New(dev)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, k.Close()) })
	return dev, k
}

// views are the layouts every elementwise kernel is tested on: contiguous,
// sliced with a step, transposed, flipped (negative strides), and 3-D.
var views = []struct {
	name  string
	shape []int
	view  func(a *devarray.DevArray) (*devarray.DevArray, error)
}{
	{"contiguous", []int{37, 29}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a, nil }},
	{"step-2 rows, step-3 cols", []int{40, 30}, func(a *devarray.DevArray) (*devarray.DevArray, error) {
		v, err := a.Slice(0, 1, 40, 2)
		if err != nil {
			return nil, err
		}
		return v.Slice(1, 0, 30, 3)
	}},
	{"transposed", []int{33, 17}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Transpose() }},
	{"flipped", []int{25, 19}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Flip(1) }},
	{"3-D permuted", []int{6, 7, 8}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Permute(2, 0, 1) }},
}

func randomFloats[T float32 | float64](n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(rand.Float64()*4 - 2)
	}
	return s
}

// hostOf reads a view to the host through the device's pitched copies, an
// independent path from the kernels'.
func hostOf[T devarray.Element](t *testing.T, a *devarray.DevArray) []T {
	t.Helper()
	h, err := devarray.ToHost[T](a)
	require.NoError(t, err)
	return h
}

func TestFillScaleAxpySumFloat32(t *testing.T) { testElementwise[float32](t, 1e-6) }
func TestFillScaleAxpySumFloat64(t *testing.T) { testElementwise[float64](t, 1e-12) }

func testElementwise[T float32 | float64](t *testing.T, tol float64) {
	dev, k := setup(t)
	for _, tt := range views {
		t.Run(tt.name, func(t *testing.T) {
			n := 1
			for _, s := range tt.shape {
				n *= s
			}
			base, err := devarray.FromHost(dev, randomFloats[T](n), tt.shape...)
			require.NoError(t, err)
			defer base.Free()
			v, err := tt.view(base)
			require.NoError(t, err)

			// Scale: every element of the view times alpha, nothing else changes.
			before := hostOf[T](t, v)
			alpha := rand.Float64()*3 - 1.5
			require.NoError(t, k.Scale(v, alpha))
			after := hostOf[T](t, v)
			for i := range before {
				assert.InEpsilon(t, float64(T(alpha)*before[i]), float64(after[i]), tol, "element %d", i)
			}

			// Axpy: y = alpha*x + y with x contiguous and y the strided view.
			x, err := devarray.FromHost(dev, randomFloats[T](int(v.Size())), v.Shape()...)
			require.NoError(t, err)
			defer x.Free()
			xs := hostOf[T](t, x)
			require.NoError(t, k.Axpy(v, alpha, x))
			got := hostOf[T](t, v)
			for i := range got {
				want := alpha*float64(xs[i]) + float64(after[i])
				assert.InDelta(t, want, float64(got[i]), tol*8, "element %d", i)
			}

			// Sum, against a float64 sum in reverse order.
			var want float64
			for i := len(got) - 1; i >= 0; i-- {
				want += float64(got[i])
			}
			sum, err := k.Sum(v)
			require.NoError(t, err)
			assert.InDelta(t, want, sum, 1e-9*float64(len(got))+1e-9)

			// Fill: the view's elements only.
			whole := hostOf[T](t, base)
			fill := T(rand.Float64() + 3)
			require.NoError(t, k.Fill(v, float64(fill)))
			for _, e := range hostOf[T](t, v) {
				require.Equal(t, fill, e)
			}
			changed := 0
			for i, e := range hostOf[T](t, base) {
				if e != whole[i] {
					require.Equal(t, fill, e, "element %d changed to something else", i)
					changed++
				}
			}
			assert.Equal(t, int(v.Size()), changed, "Fill wrote exactly the view's elements")
		})
	}
}

func TestPackUnpackEveryItemSize(t *testing.T) {
	dev, k := setup(t)
	for _, dt := range []devarray.DType{devarray.Uint8, devarray.Int16, devarray.Float32, devarray.Float64, devarray.Complex128} {
		for _, tt := range views {
			t.Run(dt.String()+"/"+tt.name, func(t *testing.T) {
				n := 1
				for _, s := range tt.shape {
					n *= s
				}
				data := make([]byte, n*int(dt.Size()))
				for i := range data {
					data[i] = byte(rand.Uint32())
				}
				base, err := devarray.FromBytes(dev, data, dt, tt.shape...)
				require.NoError(t, err)
				defer base.Free()
				v, err := tt.view(base)
				require.NoError(t, err)
				packed, err := devarray.Empty(dev, dt, v.Shape()...)
				require.NoError(t, err)
				defer packed.Free()

				before := dev.Ledger().Snapshot()
				require.NoError(t, k.Pack(packed, v))
				diff := accounting.Diff(before, dev.Ledger().Snapshot())
				assert.Zero(t, diff.CopyTotal(accounting.DtoH).Count+diff.CopyTotal(accounting.HtoD).Count, "packing moves nothing across the bus")

				want := make([]byte, v.NBytes())
				require.NoError(t, v.CopyTo(want), "the view read by pitched copies")
				got := make([]byte, packed.NBytes())
				require.NoError(t, packed.CopyTo(got))
				assert.Equal(t, want, got)

				// Unpack fresh data into the view; the bytes outside it stay.
				fresh := make([]byte, v.NBytes())
				for i := range fresh {
					fresh[i] = byte(rand.Uint32())
				}
				require.NoError(t, packed.CopyFrom(fresh))
				require.NoError(t, k.Unpack(v, packed))
				back := make([]byte, v.NBytes())
				require.NoError(t, v.CopyTo(back))
				assert.Equal(t, fresh, back)
				all := make([]byte, base.NBytes())
				require.NoError(t, base.CopyTo(all))
				if v.Size() < base.Size() {
					differ := 0
					for i := range all {
						if all[i] != data[i] {
							differ++
						}
					}
					assert.LessOrEqual(t, differ, int(v.NBytes()), "only the view's bytes may change")
				}
			})
		}
	}
}

func TestChecksum(t *testing.T) {
	// Values worked out by hand: sum of (2i+1)·word_i.
	for _, tt := range []struct {
		b    []byte
		want uint64
	}{
		{nil, 0},
		{[]byte{1, 0, 0, 0}, 1},
		{[]byte{1, 0, 0, 0, 2, 0, 0, 0}, 1 + 3*2},
		{[]byte{0xff}, 255},
		{[]byte{1, 0, 0, 0, 1}, 1 + 3*1},
		{[]byte{0, 1, 0, 0}, 256},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0xffffffff * 4},
	} {
		assert.Equal(t, tt.want, kernels.Checksum(tt.b), "% x", tt.b)
	}

	dev, k := setup(t)
	for _, n := range []int{1, 3, 4, 1000, 1 << 20, 1<<20 + 3} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rand.Uint32())
		}
		a, err := devarray.FromBytes(dev, data, devarray.Uint8, n)
		require.NoError(t, err)
		got, err := k.Checksum(a)
		require.NoError(t, err)
		assert.Equal(t, kernels.Checksum(data), got, "%d bytes: device and host agree bit for bit", n)
		if n >= 8 {
			// Swapping two different words changes the checksum.
			w0, w1 := binary.LittleEndian.Uint32(data), binary.LittleEndian.Uint32(data[4:])
			if w0 != w1 {
				swapped := slices.Clone(data)
				copy(swapped, data[4:8])
				copy(swapped[4:], data[:4])
				assert.NotEqual(t, kernels.Checksum(data), kernels.Checksum(swapped))
			}
		}
		require.NoError(t, a.Free())
	}
}

func TestKernelErrors(t *testing.T) {
	dev, k := setup(t)
	a, err := devarray.FromHost(dev, randomFloats[float32](64), 8, 8)
	require.NoError(t, err)
	defer a.Free()
	ints, err := devarray.FromHost(dev, []int32{1, 2, 3, 4})
	require.NoError(t, err)
	defer ints.Free()
	tr, err := a.Transpose()
	require.NoError(t, err)
	ro, err := a.AsReadOnly()
	require.NoError(t, err)
	small, err := devarray.Empty(dev, devarray.Float32, 4, 4)
	require.NoError(t, err)
	defer small.Free()
	deep, err := devarray.Empty(dev, devarray.Float32, 2, 2, 2, 2, 2, 2, 2, 2, 2)
	require.NoError(t, err)
	defer deep.Free()
	deep, err = deep.Transpose() // 9 axes that do not merge
	require.NoError(t, err)

	assert.ErrorIs(t, k.Fill(ints, 1), devarray.ErrDType)
	assert.ErrorIs(t, k.Scale(ro, 2), devarray.ErrReadOnly)
	assert.ErrorIs(t, k.Axpy(a, 1, small), devarray.ErrShape)
	wide, err := devarray.Empty(dev, devarray.Float64, a.Shape()...)
	require.NoError(t, err)
	defer wide.Free()
	err = k.Axpy(a, 1, wide)
	assert.ErrorIs(t, err, devarray.ErrDType, "float32 and float64 differ in dtype, not in shape")
	assert.NotErrorIs(t, err, devarray.ErrShape)
	assert.Contains(t, err.Error(), "x is float64, y is float32")
	_, err = k.Checksum(tr)
	assert.ErrorIs(t, err, devarray.ErrNotViewable)
	assert.ErrorIs(t, k.Pack(tr, a), devarray.ErrNotViewable, "the packed side must be contiguous")
	assert.ErrorIs(t, k.Pack(small, a), devarray.ErrShape)
	assert.ErrorIs(t, k.Fill(deep, 1), devarray.ErrShape, "more than MaxDims axes, even merged")

	other, err := device.Open("sim:7?mem=1MiB")
	require.NoError(t, err)
	defer other.Close()
	b, err := devarray.FromHost(other, randomFloats[float32](4))
	require.NoError(t, err)
	defer b.Free()
	assert.ErrorIs(t, k.Fill(b, 1), devarray.ErrDevice, "an array of another device")

	require.NoError(t, small.Free())
	assert.ErrorIs(t, k.Fill(small, 1), devarray.ErrFreed)
}

// Arrays of more axes than a kernel's layout holds (MaxDims): size-1 axes
// and axes that step through memory as one are merged first, so Fill and
// Pack take them; Pack and Unpack take any other layout too, one launch per
// index of the leading axes; DevArray's strided copies, which pack on the
// device, then work on every view. (FuzzViews found a 9-axis view that
// ToHost refused.)
func TestMoreAxesThanALayoutHolds(t *testing.T) {
	dev, k := setup(t)
	// 2^9 elements transposed: 9 axes, none of which merge. Element m of
	// the view, in C order, is element bitreverse(m) of the base.
	const nd = 9
	two := slices.Repeat([]int{2}, nd)
	data := randomFloats[float32](1 << nd)
	base, err := devarray.FromHost(dev, data, two...)
	require.NoError(t, err)
	defer base.Free()
	view, err := base.Transpose()
	require.NoError(t, err)
	want := make([]float32, len(data))
	for m := range want {
		r := 0
		for b := range nd {
			r |= (m >> b & 1) << (nd - 1 - b)
		}
		want[m] = data[r]
	}

	packed, err := devarray.Empty(dev, devarray.Float32, view.Shape()...)
	require.NoError(t, err)
	defer packed.Free()
	require.NoError(t, k.Pack(packed, view))
	got, err := devarray.ToHost[float32](packed)
	require.NoError(t, err)
	assert.Equal(t, want, got, "Pack of 9 axes that do not merge")

	got, err = devarray.ToHost[float32](view)
	require.NoError(t, err)
	assert.Equal(t, want, got, "ToHost of the view")

	fresh := randomFloats[float32](len(data))
	require.NoError(t, view.CopyFrom(devarray.AsBytes(fresh)))
	all, err := devarray.ToHost[float32](base)
	require.NoError(t, err)
	for m := range fresh {
		r := 0
		for b := range nd {
			r |= (m >> b & 1) << (nd - 1 - b)
		}
		require.Equal(t, fresh[m], all[r], "element %d of the view, written through Unpack", m)
	}

	// Ten axes, eight of them of size 1: two after merging, one kernel.
	ones := append(slices.Repeat([]int{1}, 8), 5, 7)
	thin, err := devarray.Empty(dev, devarray.Float64, ones...)
	require.NoError(t, err)
	defer thin.Free()
	require.NoError(t, k.Fill(thin, 2.5))
	vals, err := devarray.ToHost[float64](thin)
	require.NoError(t, err)
	assert.Equal(t, slices.Repeat([]float64{2.5}, 35), vals)
	sum, err := k.Sum(thin)
	require.NoError(t, err)
	assert.InDelta(t, 87.5, sum, 1e-12)
}
