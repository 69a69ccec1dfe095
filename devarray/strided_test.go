package devarray_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/stridedcase"
)

// A strided view moves in one pitched driver copy when one can express
// it, else in one pack kernel and one contiguous copy, both directions:
// the ledger counts exactly that, and the data is the
// NumPy-style reference's.
func TestStridedCopyCounts(t *testing.T) {
	for _, c := range stridedcase.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			dev := newDev(t)
			n := 1
			for _, d := range c.Parent {
				n *= d
			}
			data := randomFloat32(n)
			parent, err := devarray.FromHost(dev, data, c.Parent...)
			require.NoError(t, err)
			defer parent.Free()
			view, err := c.View(parent)
			require.NoError(t, err)
			assert.False(t, view.IsContiguous(), "the case is strided")
			kernels, allocs := int64(1), int64(1)
			if c.Pitched {
				kernels, allocs = 0, 0
			}

			before := dev.Ledger().Snapshot()
			got, err := devarray.ToHost[float32](view)
			require.NoError(t, err)
			d := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, stridedcase.Gather(c, data), got, "download of the view")
			assert.Equal(t, int64(1), d.CopyTotal(accounting.DtoH).Count, "one copy crosses to the host")
			assert.Equal(t, view.NBytes(), d.CopyTotal(accounting.DtoH).Bytes, "only the view's bytes")
			assert.Equal(t, kernels, d.Copies[accounting.DtoD][accounting.PathKernel].Count, "pack kernels")
			assert.Equal(t, 1+kernels, d.Copied().Count, "and nothing else")
			assert.Equal(t, allocs, d.Allocations(), "temporaries")

			fresh := randomFloat32(int(view.Size()))
			before = dev.Ledger().Snapshot()
			require.NoError(t, view.CopyFrom(devarray.AsBytes(fresh)))
			d = accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(1), d.CopyTotal(accounting.HtoD).Count, "one copy crosses to the device")
			assert.Equal(t, kernels, d.Copies[accounting.DtoD][accounting.PathKernel].Count, "unpack kernels")
			assert.Equal(t, 1+kernels, d.Copied().Count, "and nothing else")
			assert.Equal(t, allocs, d.Allocations(), "temporaries")
			all, err := devarray.ToHost[float32](parent)
			require.NoError(t, err)
			want := append([]float32(nil), data...)
			for i, p := range c.ParentIndex() {
				want[p] = fresh[i]
			}
			assert.Equal(t, want, all, "the upload wrote the view's elements and nothing else")
		})
	}
}

func TestPitchedPair(t *testing.T) {
	cases := []struct {
		name                 string
		shape                []int
		a, b                 []int64
		ok                   bool
		width, height, depth int64
	}{
		{"both contiguous", []int{4, 8}, nil, nil, true, 128, 1, 1},
		{"row slice", []int{4, 8}, []int64{64, 4}, nil, true, 32, 4, 1},
		{"both pitched", []int{4, 8}, []int64{64, 4}, []int64{48, 4}, true, 32, 4, 1},
		{"3-D", []int{3, 4, 8}, []int64{5 * 64, 64, 4}, nil, true, 32, 4, 3},
		{"3-D that merges to 2-D", []int{3, 4, 8}, []int64{4 * 64, 64, 4}, nil, true, 32, 12, 1},
		{"3-D slice stride not a multiple of the pitch", []int{3, 4, 8}, []int64{4*64 + 4, 64, 4}, nil, false, 0, 0, 0},
		{"3-D slices overlap", []int{3, 4, 8}, []int64{3 * 64, 64, 4}, nil, false, 0, 0, 0},
		{"column", []int{4}, []int64{64}, nil, true, 4, 4, 1},
		{"transposed", []int{8, 4}, []int64{4, 32}, nil, false, 0, 0, 0},
		{"flipped", []int{4, 8}, []int64{-32, 4}, nil, false, 0, 0, 0},
		{"4-D", []int{2, 3, 4, 8}, []int64{4096, 5 * 64, 64, 4}, nil, false, 0, 0, 0},
		{"pitch at the driver's limit", []int{2, 8}, []int64{1<<31 - 1, 4}, nil, true, 32, 2, 1},
		{"pitch past the driver's limit", []int{2, 8}, []int64{1 << 31, 4}, nil, false, 0, 0, 0},
		{"empty", []int{0, 8}, nil, nil, false, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ok := devarray.PitchedPair(c.shape, c.a, c.b, 4)
			require.Equal(t, c.ok, ok)
			if ok {
				assert.Equal(t, [3]int64{c.width, c.height, c.depth}, [3]int64{p.Width, p.Height, p.Depth})
			}
		})
	}
}

// Only the kernel path needs device memory: on a full device a view that
// a pitched copy moves still comes down, and one that must be packed fails
// with the temporary's out-of-memory error, both directions, and leaves
// nothing allocated.
func TestStridedCopyOnAFullDevice(t *testing.T) {
	dev, err := device.Open("sim:0?mem=2MiB")
	require.NoError(t, err)
	defer dev.Close()
	data := randomFloat32(512 * 512)
	a, err := devarray.FromHost(dev, data, 512, 512) // 1 MiB
	require.NoError(t, err)
	defer a.Free()
	rest, err := dev.Malloc(1 << 20) // the other MiB: the device is full
	require.NoError(t, err)
	defer dev.Free(rest)

	columns, err := a.Slice(1, 0, 256) // rows of 1 KiB: one 2-D copy
	require.NoError(t, err)
	got, err := devarray.ToHost[float32](columns)
	require.NoError(t, err)
	assert.Equal(t, data[:256], got[:256], "the first row")

	transposed, err := a.Transpose() // rows of one element: packed by a kernel
	require.NoError(t, err)
	before := dev.Ledger().Snapshot()
	_, err = devarray.ToHost[float32](transposed)
	require.ErrorIs(t, err, device.ErrOutOfMemory)
	assert.Contains(t, err.Error(), "temporary for a strided copy")
	err = devarray.CopyFromHost(transposed, randomFloat32(512*512))
	require.ErrorIs(t, err, device.ErrOutOfMemory)
	assert.Contains(t, err.Error(), "temporary for a strided copy")
	d := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(2), d.Kinds[accounting.Device].Failed, "the two temporaries were refused")
	assert.Zero(t, d.Copied().Count, "and nothing moved")
	assert.Equal(t, int64(2<<20), dev.Ledger().Current(accounting.Device), "nothing left allocated")
}
