//go:build cgo

package interop_test

import (
	"math"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/interop/internal/dlpacktest"
)

// dlpackABI is one of the two DLPack ABIs, as export and import functions.
type dlpackABI struct {
	name     string
	export   func(*devarray.DevArray, ...interop.DLPackOption) (unsafe.Pointer, error)
	importer func(devarray.Backend, unsafe.Pointer, ...devarray.WrapOption) (*devarray.DevArray, error)
	remove   func(unsafe.Pointer)
}

var dlpackABIs = []dlpackABI{
	{"versioned", interop.ExportDLPack, interop.ImportDLPack, interop.DeleteDLPack},
	{"legacy", interop.ExportDLPackLegacy, interop.ImportDLPackLegacy, interop.DeleteDLPackLegacy},
}

// Go → DLPack → Go keeps pointer, shape, strides, dtype and read-only for
// both ABIs, several dtypes and views; the ledger shows no copy and no
// allocation, and freeing the import calls the deleter, which releases
// the export's hold.
func TestDLPackRoundTrip(t *testing.T) {
	dev := testdev.Open(t)
	for _, dtype := range []devarray.DType{devarray.Float32, devarray.Float64, devarray.Int16, devarray.Uint8, devarray.Complex64} {
		a, err := devarray.FromBytes(dev, testdev.RandomBytes(int(6*8*dtype.Size())), dtype, 6, 8)
		require.NoError(t, err)
		sl, err := a.Slice(1, 1, 7, 3)
		require.NoError(t, err)
		tr, err := a.Transpose()
		require.NoError(t, err)
		ro, err := sl.AsReadOnly()
		require.NoError(t, err)
		for _, abi := range dlpackABIs {
			for _, tc := range []struct {
				name string
				arr  *devarray.DevArray
			}{{"contiguous", a}, {"stepped slice", sl}, {"transposed", tr}, {"read-only", ro}} {
				t.Run(dtype.String()+"/"+abi.name+"/"+tc.name, func(t *testing.T) {
					before := dev.Ledger().Snapshot()
					p, err := abi.export(tc.arr)
					if abi.name == "legacy" && tc.arr.ReadOnly() {
						assert.ErrorIs(t, err, interop.ErrInterface, "the legacy ABI cannot mark read-only")
						assert.Zero(t, a.Holds())
						return
					}
					require.NoError(t, err)
					assert.Equal(t, 1, a.Holds(), "the export holds the memory")
					b, err := abi.importer(dev, p)
					require.NoError(t, err)
					assert.Equal(t, tc.arr.Ptr(), b.Ptr())
					assert.Equal(t, tc.arr.Shape(), b.Shape())
					assert.Equal(t, tc.arr.Strides(), b.Strides())
					assert.Equal(t, tc.arr.DType(), b.DType())
					assert.Equal(t, tc.arr.ReadOnly(), b.ReadOnly())
					assert.Equal(t, tc.arr.Device(), b.Device())
					assert.False(t, b.Owned())
					want := make([]byte, tc.arr.NBytes())
					require.NoError(t, tc.arr.CopyTo(want))
					got := make([]byte, b.NBytes())
					require.NoError(t, b.CopyTo(got))
					assert.Equal(t, want, got)
					require.NoError(t, b.Free(), "the deleter runs")
					require.NoError(t, b.Free(), "and only once")
					assert.Zero(t, a.Holds(), "the deleter released the hold")
					diff := accounting.Diff(before, dev.Ledger().Snapshot())
					kernels := diff.Copies[accounting.DtoD][accounting.PathKernel]
					assert.Equal(t, 2*tc.arr.NBytes(), diff.CopyTotal(accounting.DtoH).Bytes, "only the two reads above crossed to the host")
					assert.Equal(t, diff.Copied().Bytes, diff.CopyTotal(accounting.DtoH).Bytes+kernels.Bytes, "and their pack kernels, if strided, copied on the device")
					assert.Equal(t, kernels.Count, diff.Allocations(), "a hand-over allocates nothing: the reads' pack temporaries only")
				})
			}
		}
		require.NoError(t, a.Free())
	}
}

// The memory outlives its owner's Free until the consumer calls the deleter.
func TestDLPackOwnerStaysAlive(t *testing.T) {
	for _, abi := range dlpackABIs {
		t.Run(abi.name, func(t *testing.T) {
			dev := testdev.Open(t)
			data := randomFloats(64)
			a, err := devarray.FromHost(dev, data, 8, 8)
			require.NoError(t, err)
			p, err := abi.export(a)
			require.NoError(t, err)
			require.NoError(t, a.Free())
			assert.ErrorIs(t, a.Err(), devarray.ErrFreed)
			assert.Equal(t, a.NBytes(), dev.Ledger().Current(accounting.Device), "still allocated for the consumer")
			b, err := abi.importer(dev, p)
			require.NoError(t, err)
			got, err := devarray.ToHost[float32](b)
			require.NoError(t, err)
			assert.Equal(t, data, got)
			require.NoError(t, b.Free())
			assert.Zero(t, dev.Ledger().Current(accounting.Device), "the deleter freed it")
		})
	}
}

// A tensor nobody consumes is deleted by its producer, which frees as much.
func TestDLPackDeleteUnconsumed(t *testing.T) {
	for _, abi := range dlpackABIs {
		t.Run(abi.name, func(t *testing.T) {
			dev := testdev.Open(t)
			a, err := devarray.FromHost(dev, randomFloats(16))
			require.NoError(t, err)
			p, err := abi.export(a)
			require.NoError(t, err)
			abi.remove(p)
			assert.Zero(t, a.Holds())
			abi.remove(nil) // harmless
			require.NoError(t, a.Free())
		})
	}
}

// DLPackCopy hands over a counted copy flagged IS_COPIED, owned by the tensor.
func TestDLPackCopy(t *testing.T) {
	dev := testdev.Open(t)
	data := randomFloats(12 * 10)
	a, err := devarray.FromHost(dev, data, 12, 10)
	require.NoError(t, err)
	defer a.Free()
	tr, err := a.Transpose()
	require.NoError(t, err)
	before := dev.Ledger().Snapshot()
	p, err := interop.ExportDLPack(tr, interop.DLPackCopy())
	require.NoError(t, err)
	flags := *(*uint64)(unsafe.Add(p, 24)) // version (8), manager_ctx (8), deleter (8), then flags
	assert.Equal(t, interop.DLPackIsCopied, flags&interop.DLPackIsCopied)
	b, err := interop.ImportDLPack(dev, p)
	require.NoError(t, err)
	handedOver := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.NotEqual(t, tr.Ptr(), b.Ptr(), "a copy")
	assert.True(t, b.IsContiguous())
	want, err := devarray.ToHost[float32](tr)
	require.NoError(t, err)
	got, err := devarray.ToHost[float32](b)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(1), handedOver.Allocations(), "one allocation for the copy")
	assert.GreaterOrEqual(t, diff.Kinds[accounting.Device].Current, a.NBytes(), "the copy is allocated")
	require.NoError(t, b.Free())
	assert.Equal(t, before.Kinds[accounting.Device].Current, dev.Ledger().Current(accounting.Device), "the deleter freed the copy")
}

// validTensor is a 2×3 float32 C-contiguous CPU tensor at 0x1000.
func validTensor(versioned bool) dlpacktest.Tensor {
	return dlpacktest.Tensor{
		Versioned: versioned, Major: 1, Minor: 1,
		DeviceType: devarray.DLCPU, NDim: 2,
		Code: devarray.DLFloat, Bits: 32, Lanes: 1,
		Shape: []int64{2, 3}, Data: 0x1000,
	}
}

func build(t *testing.T, tensor dlpacktest.Tensor) *dlpacktest.Built {
	t.Helper()
	b, err := dlpacktest.Build(tensor)
	require.NoError(t, err)
	t.Cleanup(b.Free)
	return b
}

func importBuilt(b devarray.Backend, built *dlpacktest.Built, opts ...devarray.WrapOption) (*devarray.DevArray, error) {
	if built.Tensor.Versioned {
		return interop.ImportDLPack(b, built.Pointer, opts...)
	}
	return interop.ImportDLPackLegacy(b, built.Pointer, opts...)
}

// Element strides and byte_offset become byte strides and a pointer; the
// flags set read-only; Free calls a foreign deleter once.
func TestImportDLPackForeign(t *testing.T) {
	for _, versioned := range []bool{true, false} {
		tensor := validTensor(versioned)
		tensor.Code, tensor.Bits = devarray.DLFloat, 64
		tensor.Shape, tensor.Strides = []int64{4, 5}, []int64{1, 8}
		tensor.ByteOffset = 24
		tensor.Flags = interop.DLPackReadOnly | 1<<40 // unknown flags are ignored
		built := build(t, tensor)
		a, err := importBuilt(nil, built)
		require.NoError(t, err)
		assert.Equal(t, devarray.Ptr(0x1000+24), a.Ptr())
		assert.Equal(t, []int64{8, 64}, a.Strides())
		assert.Equal(t, devarray.Float64, a.DType())
		assert.Equal(t, devarray.DeviceID{Kind: devarray.CPU}, a.Device())
		assert.Equal(t, versioned, a.ReadOnly(), "only the versioned ABI has flags")
		assert.Zero(t, built.Deleted())
		require.NoError(t, a.Free())
		require.NoError(t, a.Free())
		assert.Equal(t, 1, built.Deleted())
	}
}

// Every malformed field is a clear error; nothing is taken, so the deleter
// is not called.
func TestImportDLPackErrors(t *testing.T) {
	dev := testdev.Open(t)
	devType, err := dev.DeviceID().Kind.DLPack()
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		change  func(*dlpacktest.Tensor)
		backend devarray.Backend
		opts    []devarray.WrapOption
		want    error
	}{
		{"version 0", func(t *dlpacktest.Tensor) { t.Major = 0 }, nil, nil, interop.ErrInterface},
		{"version 2", func(t *dlpacktest.Tensor) { t.Major = 2 }, nil, nil, interop.ErrInterface},
		{"unknown device type", func(t *dlpacktest.Tensor) { t.DeviceType = 4 }, nil, nil, devarray.ErrDevice},
		{"negative device id", func(t *dlpacktest.Tensor) { t.DeviceID = -1 }, nil, nil, interop.ErrInterface},
		{"device not the backend's", func(t *dlpacktest.Tensor) { t.DeviceType = devType + 1 }, dev, nil, devarray.ErrDevice},
		{"ordinal not the backend's", func(t *dlpacktest.Tensor) { t.DeviceType, t.DeviceID = devType, 7 }, dev, nil, devarray.ErrDevice},
		{"negative ndim", func(t *dlpacktest.Tensor) { t.NDim = -1 }, nil, nil, interop.ErrInterface},
		{"too many dimensions", func(t *dlpacktest.Tensor) { t.NDim = 65 }, nil, nil, interop.ErrInterface},
		{"null shape", func(t *dlpacktest.Tensor) { t.Shape = nil }, nil, nil, interop.ErrInterface},
		{"negative size", func(t *dlpacktest.Tensor) { t.Shape = []int64{2, -3} }, nil, nil, interop.ErrInterface},
		{"overflowing size", func(t *dlpacktest.Tensor) { t.Shape = []int64{1 << 40, 1 << 40} }, nil, nil, devarray.ErrOverflow},
		{"two lanes", func(t *dlpacktest.Tensor) { t.Lanes = 2 }, nil, nil, devarray.ErrDType},
		{"12-bit floats", func(t *dlpacktest.Tensor) { t.Bits = 12 }, nil, nil, devarray.ErrDType},
		{"unknown type code", func(t *dlpacktest.Tensor) { t.Code = 9 }, nil, nil, devarray.ErrDType},
		{"overflowing stride", func(t *dlpacktest.Tensor) { t.Strides = []int64{math.MaxInt64 / 2, 1} }, nil, nil, interop.ErrInterface},
		{"most negative stride", func(t *dlpacktest.Tensor) { t.Strides = []int64{math.MinInt64, 1} }, nil, nil, interop.ErrInterface},
		{"overflowing byte offset", func(t *dlpacktest.Tensor) { t.ByteOffset = math.MaxUint64 - 0x10 }, nil, nil, interop.ErrInterface},
		{"null data", func(t *dlpacktest.Tensor) { t.Data = 0 }, nil, nil, devarray.ErrBounds},
		{"outside the allocation", func(t *dlpacktest.Tensor) { t.Strides = []int64{100, 1} }, nil,
			[]devarray.WrapOption{devarray.WithBounds(0x1000, 24)}, devarray.ErrBounds},
	} {
		for _, versioned := range []bool{true, false} {
			if !versioned && tc.name[:7] == "version" {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				tensor := validTensor(versioned)
				tc.change(&tensor)
				built := build(t, tensor)
				_, err := importBuilt(tc.backend, built, tc.opts...)
				assert.ErrorIs(t, err, tc.want)
				assert.Zero(t, built.Deleted(), "a refused tensor is not deleted")
			})
		}
	}
	_, err = interop.ImportDLPack(nil, nil)
	assert.ErrorIs(t, err, interop.ErrInterface)
	_, err = interop.ImportDLPackLegacy(nil, nil)
	assert.ErrorIs(t, err, interop.ErrInterface)
}

// FuzzImportDLPack builds a tensor from arbitrary field values: the
// importer may refuse it, never crash; what it accepts has the tensor's
// shape and lies inside the bounds given, and Free calls the deleter once.
func FuzzImportDLPack(f *testing.F) {
	f.Add(true, uint32(1), uint64(0), int32(1), int32(0), int32(2), uint8(2), uint8(32), uint16(1), []byte{2, 3}, []byte{}, uint64(0x1000), uint64(0))
	f.Add(false, uint32(0), uint64(1), int32(2), int32(0), int32(3), uint8(0), uint8(8), uint16(1), []byte{4, 1, 2}, []byte{2, 255, 1}, uint64(0x2000), uint64(8))
	f.Add(true, uint32(1), uint64(3), int32(13), int32(1), int32(0), uint8(5), uint8(128), uint16(1), []byte{}, []byte{}, uint64(0x1000), uint64(1<<20))
	f.Add(true, uint32(2), uint64(0), int32(3), int32(0), int32(70), uint8(1), uint8(16), uint16(4), []byte{1}, []byte{1}, uint64(0), uint64(0))
	const base, size = 0x1000, 1 << 20
	f.Fuzz(func(t *testing.T, versioned bool, major uint32, flags uint64, devType, devID, ndim int32,
		code, nbits uint8, lanes uint16, shape, strides []byte, data, offset uint64) {
		tensor := dlpacktest.Tensor{
			Versioned: versioned, Major: major, Flags: flags,
			DeviceType: devType, DeviceID: devID, NDim: ndim,
			Code: code, Bits: nbits, Lanes: lanes,
			Data: uintptr(data), ByteOffset: offset,
		}
		// The arrays hold ndim entries, as a producer's must; a tensor
		// whose ndim is out of range gets short ones, which the importer
		// must refuse before reading them.
		n := min(max(int(ndim), 0), 2*interop.DLPackMaxDims)
		if len(shape) > 0 {
			tensor.Shape = make([]int64, n)
			for i := range n {
				tensor.Shape[i] = int64(int8(shape[i%len(shape)])) // small, sometimes negative
			}
		}
		if len(strides) > 0 {
			tensor.Strides = make([]int64, n)
			for i := range n {
				tensor.Strides[i] = int64(int8(strides[i%len(strides)])) << (strides[0] % 64)
			}
		}
		built, err := dlpacktest.Build(tensor)
		require.NoError(t, err)
		defer built.Free()
		a, err := importBuilt(nil, built, devarray.WithBounds(base, size))
		if err != nil {
			require.Zero(t, built.Deleted())
			return
		}
		require.Equal(t, int(ndim), a.NDim())
		for i, n := range a.Shape() {
			require.Equal(t, tensor.Shape[i], int64(n))
		}
		if a.Size() > 0 {
			lo, hi := a.Extent()
			off := int64(a.Ptr() - base)
			require.GreaterOrEqual(t, off+lo, int64(0))
			require.LessOrEqual(t, off+hi, int64(size))
		}
		require.NoError(t, a.Free())
		require.Equal(t, 1, built.Deleted())
	})
}

// A failed export holds nothing and leaves nothing allocated: a stride
// DLPack's element strides cannot express, and a copy whose allocation fails.
func TestDLPackExportFailuresLeaveNothing(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.FromBytes(dev, testdev.RandomBytes(64), devarray.Uint8, 64)
	require.NoError(t, err)
	defer a.Free()
	_, err = devarray.Wrap(dev, devarray.Descriptor{Ptr: a.Ptr(), Shape: []int{10}, Strides: []int64{6}, DType: devarray.Float32, Device: dev.DeviceID()},
		devarray.WithBounds(a.Ptr(), 64))
	require.ErrorIs(t, err, devarray.ErrMisaligned, "device memory: a 6-byte stride of 4-byte elements is refused when wrapped")
	// Pageable host memory may have any strides (no kernel reads it in place).
	host := make([]byte, 64)
	defer runtime.KeepAlive(host)
	odd, err := devarray.Wrap(nil, devarray.Descriptor{Ptr: devarray.Ptr(unsafe.Pointer(&host[0])), Shape: []int{10}, Strides: []int64{6},
		DType: devarray.Float32, Device: devarray.DeviceID{Kind: devarray.CPU}}, devarray.WithBounds(devarray.Ptr(unsafe.Pointer(&host[0])), 64))
	require.NoError(t, err)
	for _, abi := range dlpackABIs {
		_, err := abi.export(odd)
		assert.ErrorIs(t, err, interop.ErrInterface, "%s: a 6-byte stride of 4-byte elements", abi.name)
		assert.Zero(t, odd.Holds(), "%s: the hold is released", abi.name)
	}
	if s, ok := dev.(interface{ FailAlloc(int64) }); ok {
		before := dev.Ledger().Current(accounting.Device)
		s.FailAlloc(1)
		_, err := interop.ExportDLPack(a, interop.DLPackCopy())
		assert.Error(t, err, "the copy's allocation fails")
		assert.Equal(t, before, dev.Ledger().Current(accounting.Device), "nothing left allocated")
		assert.Zero(t, a.Holds())
	}
}
