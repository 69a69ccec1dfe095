//go:build cgo

package interop_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/interop/internal/dlpacktest"
)

// Managed memory goes through DLPack as kDLCUDAManaged ("CUDA
// managed/unified memory allocated by cudaMallocManaged", dlpack.h) from
// a CUDA device, as kDLCPU from sim (whose memory is host memory), and
// comes back to the same device; through the CUDA Array Interface as any
// device memory (its pointer is valid on the device). Nothing is copied
// or allocated.
func TestManagedExports(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Float32, 16, 64)
	require.NoError(t, err)
	defer a.Free()
	require.NoError(t, a.CopyFrom(testdev.RandomBytes(int(a.NBytes()))))
	want := devarray.DLCPU
	if dev.DeviceID().Kind == devarray.CUDA {
		want = devarray.DLCUDAManaged
	}
	before := dev.Ledger().Snapshot()

	p, err := interop.ExportDLPack(a)
	require.NoError(t, err)
	typ, id := dlpacktest.DeviceOf(p)
	assert.Equal(t, want, typ, "the DLPack device type of managed memory on %v", dev.DeviceID())
	assert.Equal(t, int32(dev.DeviceID().Ordinal), id)
	b, err := interop.ImportDLPack(dev, p)
	require.NoError(t, err, "a managed tensor comes back to its device")
	assert.Equal(t, a.Ptr(), b.Ptr())
	require.NoError(t, b.Free())

	m, err := interop.ExportCAI(a, 0)
	require.NoError(t, err)
	data := m["data"].([]any)
	assert.Equal(t, uint64(a.Ptr()), data[0])
	c, _, err := interop.ImportCAI(dev, m)
	require.NoError(t, err)
	assert.Equal(t, a.Ptr(), c.Ptr())
	require.NoError(t, c.Free())

	d := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Zero(t, d.Copied().Bytes, "no byte copied")
	assert.Zero(t, d.Allocations(), "nothing allocated")
}

// A kDLCUDAManaged tensor from another library (CuPy's or PyTorch's
// managed memory) imports into a CUDA device; into sim, whose memory is
// host memory, it is another device's.
func TestImportDLPackManaged(t *testing.T) {
	dev := testdev.Open(t)
	src, err := devarray.Empty(dev, devarray.Uint8, 256)
	require.NoError(t, err)
	defer src.Free()
	built, err := dlpacktest.Build(dlpacktest.Tensor{Versioned: true, Major: interop.DLPackMajor, DeviceType: devarray.DLCUDAManaged,
		DeviceID: int32(dev.DeviceID().Ordinal), NDim: 1, Code: 1, Bits: 8, Lanes: 1, Shape: []int64{256}, Data: uintptr(src.Ptr())})
	require.NoError(t, err)
	defer built.Free()
	b, err := interop.ImportDLPack(dev, built.Pointer)
	if dev.DeviceID().Kind != devarray.CUDA {
		assert.ErrorIs(t, err, devarray.ErrDevice)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, src.Ptr(), b.Ptr())
	require.NoError(t, b.Free())
	assert.Equal(t, 1, built.Deleted())
}

// An array whose device was closed under it, managed or not, is not
// exported: Close freed its memory, and a consumer handed its address
// would read and write memory nothing holds.
func TestExportOnClosedDevice(t *testing.T) {
	dev, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	n := 1 + rand.IntN(256)
	managed, err := devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Float32, n)
	require.NoError(t, err)
	plain, err := devarray.Empty(dev, devarray.Float32, n)
	require.NoError(t, err)
	view, err := managed.Slice(0, n/2, n)
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	for name, a := range map[string]*devarray.DevArray{"managed": managed, "device memory": plain, "managed view": view} {
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"DLPack", func() error { return second(interop.ExportDLPack(a)) }},
			{"DLPack copy", func() error { return second(interop.ExportDLPack(a, interop.DLPackCopy())) }},
			{"legacy DLPack", func() error { return second(interop.ExportDLPackLegacy(a)) }},
			{"CUDA array interface", func() error { return second(interop.ExportCAI(a, 0)) }},
			{"array interface", func() error { return second(interop.ExportArrayInterface(a)) }},
		} {
			t.Run(name+" "+tc.name, func(t *testing.T) {
				assert.ErrorIs(t, tc.call(), device.ErrClosed)
			})
		}
	}
	assert.Zero(t, dev.Ledger().Current(accounting.Managed))
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
}

// second is the error of a call that returns a value and an error.
func second[T any](_ T, err error) error { return err }
