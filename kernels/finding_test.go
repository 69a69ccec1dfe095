package kernels_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
)

// RampFilter refuses a detector axis the ramp_filter kernel cannot index:
// its tap index d - j + D - 1 is a 32-bit int, so D may be at most 2^30
// (2D - 2 < 2^31). A longer axis would reach the kernel as a negative or
// wrapped D, the kernels would do nothing, and the uninitialised scratch
// would be copied over the sinogram. The arrays borrow a small allocation
// (nothing reads them: the call must refuse before any work), and the
// check comes before the workspace is asked for, in query mode too.
func TestFinding09RampFilterDetectorCountFitsInt32(t *testing.T) {
	dev, k := setup(t)
	buf, err := devarray.Empty(dev, devarray.Float32, 64)
	require.NoError(t, err)
	defer buf.Free()
	const limit = 1 << 30
	cases := []struct {
		name   string
		dtype  devarray.DType
		shape  []int
		refuse bool
	}{
		{"float32, D = 2^30 + 1", devarray.Float32, []int{1, limit + 1}, true},
		{"float64, D = 2^31 (int32(D) < 0)", devarray.Float64, []int{1, 1 << 31}, true},
		{"float32, D = 2^32 + random (int32(D) wraps)", devarray.Float32, []int{1<<32 + 1 + rand.IntN(1<<20)}, true},
		{"float32, D = MaxInt32", devarray.Float32, []int{2, math.MaxInt32}, true},
		{"float64, D = 2^30", devarray.Float64, []int{1, limit}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := devarray.Wrap(dev, devarray.Descriptor{Ptr: buf.Ptr(), Shape: tc.shape, DType: tc.dtype, Device: dev.DeviceID()})
			require.NoError(t, err)
			defer a.Free()
			for _, mode := range []string{"query", "temporary workspace"} {
				if !tc.refuse && mode != "query" {
					continue // it would run, over the 64 elements the array borrows
				}
				var ws *accounting.Workspace
				if mode == "query" {
					ws = accounting.NewWorkspace(dev)
					require.NoError(t, ws.StartQuery())
				}
				err := k.RampFilter(a, ws)
				if !tc.refuse {
					require.True(t, accounting.IsSizeQuery(err), "%s: D = 2^30 fits the kernel: %v", mode, err)
					got, err := ws.StopQuery()
					require.NoError(t, err)
					want := kernels.RampFilterWorkspace(1, tc.shape[len(tc.shape)-1], tc.dtype.Size())
					assert.Equal(t, accounting.AlignUp(want), got, "%s: the one-pass workspace", mode)
					continue
				}
				require.ErrorIs(t, err, devarray.ErrShape, "%s: D = %d does not fit the kernel's int", mode, tc.shape[len(tc.shape)-1])
				assert.Contains(t, err.Error(), "detector", "%s: the message names the axis", mode)
			}
			assert.Zero(t, dev.Ledger().Current(accounting.Device)-buf.NBytes(), "nothing left allocated")
		})
	}
}

// A strided copy of an array whose address or strides are not multiples
// of its item size, though multiples of its dtype's alignment (a NumPy or
// CuPy complex64 view can sit at an address ≡ 4 mod 8), moves it right and
// leaves the device working: the pack kernels load words no wider than
// the layout is aligned to. pack_8 loading 64-bit words there is
// CUDA_ERROR_MISALIGNED_ADDRESS on a GPU, a sticky error that ends the
// context shared with CuPy and PyTorch; sim and the emulated driver fault
// the same way. A descriptor whose address or strides are not multiples
// of its dtype's alignment (the item size; half of it for complex dtypes)
// is refused with devarray.ErrMisaligned when it is wrapped.
func TestFinding04MisalignedStridedCopy(t *testing.T) {
	flip := func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Flip(0) }
	transpose := func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Transpose() }
	cases := []struct {
		name    string
		dtype   devarray.DType
		offset  int64 // bytes from a 256-byte aligned allocation
		shape   []int
		strides []int
		view    func(*devarray.DevArray) (*devarray.DevArray, error)
		refused bool
	}{
		{"complex64 at 4 mod 8, flipped", devarray.Complex64, 4, []int{97}, nil, flip, false},
		{"complex64 at 4 mod 8, transposed", devarray.Complex64, 260, []int{13, 21}, nil, transpose, false},
		{"complex64 at 0 mod 8, strides 4 mod 8, transposed", devarray.Complex64, 0, []int{9, 7}, []int{7*8 + 4, 8}, transpose, false},
		{"complex128 at 8 mod 16, flipped", devarray.Complex128, 8, []int{61}, nil, flip, false},
		{"int16 at 2 mod 8, transposed", devarray.Int16, 2, []int{17, 5}, nil, transpose, false},
		{"uint8 at 1, transposed", devarray.Uint8, 1, []int{11, 3}, nil, transpose, false},
		{"float32 at 2 mod 4", devarray.Float32, 2, []int{10}, nil, nil, true},
		{"float32, stride 6", devarray.Float32, 0, []int{10}, []int{6}, nil, true},
		{"float64 at 4 mod 8", devarray.Float64, 4, []int{10}, nil, nil, true},
		{"int64, strides 4 mod 8", devarray.Int64, 0, []int{4, 3}, []int{28, 8}, nil, true},
		{"complex64 at 2 mod 4", devarray.Complex64, 2, []int{10}, nil, nil, true},
		{"complex128 at 4 mod 8", devarray.Complex128, 4, []int{10}, nil, nil, true},
		{"int16 at 1", devarray.Int16, 1, []int{10}, nil, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dev := testdev.Open(t)
			base, err := devarray.Zeros(dev, devarray.Uint8, 8192)
			require.NoError(t, err)
			defer base.Free()
			var strides []int64
			if tc.strides != nil {
				strides = make([]int64, len(tc.strides))
				for i, s := range tc.strides {
					strides[i] = int64(s)
				}
			}
			d := devarray.Descriptor{Ptr: base.Ptr() + devarray.Ptr(tc.offset), Shape: tc.shape, Strides: strides, DType: tc.dtype, Device: dev.DeviceID()}
			a, err := devarray.Wrap(dev, d, devarray.WithBounds(base.Ptr(), base.NBytes()))
			if tc.refused {
				require.ErrorIs(t, err, devarray.ErrMisaligned, "a descriptor not aligned to %v", tc.dtype)
				assert.Contains(t, err.Error(), "align")
				return
			}
			require.NoError(t, err)
			defer a.Free()
			v, err := tc.view(a)
			require.NoError(t, err)
			item := int(tc.dtype.Size())
			data := testdev.RandomBytes(int(v.Size()) * item)
			before := dev.Ledger().Snapshot()

			err = v.CopyFrom(data) // unpack: scatter into the view
			require.NoError(t, err, "the copy into the view")
			got := make([]byte, len(data))
			require.NoError(t, v.CopyTo(got), "the copy out of the view (pack)")
			require.NoError(t, dev.Synchronize(), "the device works after the copies")

			kernel := accounting.Diff(before, dev.Ledger().Snapshot()).Copies[accounting.DtoD][accounting.PathKernel]
			assert.Equal(t, int64(2), kernel.Count, "one pack and one unpack kernel moved the view")
			assert.Equal(t, data, got, "the view's elements, out and back")
			all, err := devarray.ToHost[uint8](base)
			require.NoError(t, err)
			desc, err := v.Descriptor()
			require.NoError(t, err)
			i := 0
			forEachOffset(desc.Shape, desc.Strides, func(off int64) {
				at := int64(desc.Ptr-base.Ptr()) + off
				assert.Equal(t, data[i*item:(i+1)*item], all[at:at+int64(item)], "element %d in device memory", i)
				i++
			})
		})
	}
}

// forEachOffset calls f with the byte offset of each element of a layout,
// in C order.
func forEachOffset(shape []int, strides []int64, f func(off int64)) {
	idx := make([]int, len(shape))
	for _, n := range shape {
		if n == 0 {
			return
		}
	}
	for {
		var off int64
		for k, i := range idx {
			off += int64(i) * strides[k]
		}
		f(off)
		k := len(idx) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}
