package pinned_test

import (
	"encoding/binary"
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/pinned"
)

// work is a fake async copy: done when its flag is set.
type work struct{ done atomic.Bool }

func (w *work) Done() (bool, error) { return w.done.Load(), nil }
func (w *work) Wait() error         { w.done.Store(true); return nil }

func randomFloats(n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = rand.Float32()*2 - 1
	}
	return xs
}

func TestAllocKinds(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		flags pinned.Flags
		kind  accounting.Kind
	}{
		{0, accounting.Pinned},
		{pinned.Portable, accounting.Pinned},
		{pinned.Mapped, accounting.Mapped},
		{pinned.Mapped | pinned.Portable, accounting.Mapped},
		{pinned.WriteCombined, accounting.WriteCombined},
		{pinned.Mapped | pinned.WriteCombined, accounting.WriteCombined},
	} {
		t.Run(tc.flags.String(), func(t *testing.T) {
			n := int64(4096 + 4*rand.IntN(1000))
			b, err := pinned.Alloc(dev, n, tc.flags)
			require.NoError(t, err)
			assert.Equal(t, n, b.Len())
			assert.Equal(t, n, dev.Ledger().Current(tc.kind))
			assert.Equal(t, tc.flags, b.Flags())
			assert.Equal(t, tc.flags&pinned.Mapped != 0, b.Mapped())

			// The typed slices are the same memory as the bytes.
			want := randomFloats(int(n / 4))
			copy(b.Float32(), want)
			assert.Len(t, b.Bytes(), int(n))
			assert.Equal(t, devarray.AsBytes(want), b.Bytes())
			assert.Len(t, b.Float64(), int(n/8))
			assert.Len(t, b.Int32(), int(n/4))
			assert.Len(t, b.Int64(), int(n/8))
			assert.Len(t, b.Uint16(), int(n/2))
			assert.Len(t, b.Complex64(), int(n/8))

			a, err := b.Array(devarray.Float32)
			require.NoError(t, err)
			assert.Equal(t, devarray.CUDAHost, a.Device().Kind, "a pinned buffer is DLPack's kDLCUDAHost")
			assert.Equal(t, []int{int(n / 4)}, a.Shape())
			assert.Equal(t, b.HostPtr(), a.Ptr())
			_, err = b.Array(devarray.Float32, int(n/4)+1)
			assert.ErrorIs(t, err, devarray.ErrBounds, "a view larger than the buffer")

			p, err := b.DevPtr()
			if tc.flags&pinned.Mapped == 0 {
				assert.ErrorIs(t, err, pinned.ErrUnmapped)
				_, err = b.DeviceArray(devarray.Float32)
				assert.ErrorIs(t, err, pinned.ErrUnmapped)
			} else {
				require.NoError(t, err)
				assert.NotZero(t, p)
			}
			require.NoError(t, b.Free())
			require.NoError(t, b.Free(), "Free is idempotent")
			assert.Nil(t, b.Bytes(), "no memory after Free")
			assert.Nil(t, b.Float32())
			_, err = b.DevPtr()
			assert.ErrorIs(t, err, pinned.ErrFreed)
			_, err = b.Array(devarray.Uint8)
			assert.ErrorIs(t, err, pinned.ErrFreed)
			assert.Zero(t, dev.Ledger().Current(tc.kind))
		})
	}
}

func TestAllocErrors(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		name  string
		dev   driver.Device
		n     int64
		flags pinned.Flags
		want  error
	}{
		{"no device", nil, 10, 0, driver.ErrInvalidValue},
		{"zero bytes", dev, 0, 0, driver.ErrInvalidValue},
		{"negative", dev, -5, 0, driver.ErrInvalidValue},
		{"unknown flag", dev, 10, 1 << 6, driver.ErrInvalidValue},
		{"staging is not a user flag", dev, 10, driver.Staging, driver.ErrInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pinned.Alloc(tc.dev, tc.n, tc.flags)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err := pinned.Alloc(dev, 1<<62, 0)
	assert.Error(t, err, "more than the machine has")
}

// A context without CU_CTX_MAP_HOST refuses a mapped buffer, naming the
// flag; nothing falls back to unmapped memory and nothing is allocated.
func TestMappedNeedsMapHost(t *testing.T) {
	dev, err := device.Open("sim:0?mem=1MiB&maphost=false")
	require.NoError(t, err)
	defer dev.Close()
	_, err = pinned.Alloc(dev, 4096, pinned.Mapped)
	require.ErrorIs(t, err, pinned.ErrNotMapped)
	assert.Contains(t, err.Error(), "CU_CTX_MAP_HOST")
	assert.Contains(t, err.Error(), "Mapped")
	_, err = pinned.NewPool(dev, pinned.Mapped)
	assert.ErrorIs(t, err, pinned.ErrNotMapped)
	_, err = pinned.Register(dev, make([]byte, 100), pinned.Mapped)
	assert.ErrorIs(t, err, pinned.ErrNotMapped)
	b, err := pinned.Alloc(dev, 4096, pinned.Portable)
	require.NoError(t, err, "unmapped memory is still fine")
	require.NoError(t, b.Free())
	r, err := pinned.Register(dev, testdev.RandomBytes(8192), pinned.Portable)
	require.NoError(t, err, "registering without Mapped is fine too")
	require.NoError(t, r.Unregister())
	snap := dev.Ledger().Snapshot()
	assert.Zero(t, snap.Kinds[accounting.Mapped].Allocs)
}

// A kernel reads and writes a mapped buffer in place through its device
// array; no copy is recorded.
func TestDeviceArrayRunsKernelsInPlace(t *testing.T) {
	dev := testdev.Open(t)
	b, err := pinned.Alloc(dev, 4*1000, pinned.Mapped)
	require.NoError(t, err)
	defer b.Free()
	want := randomFloats(1000)
	copy(b.Float32(), want)
	a, err := b.DeviceArray(devarray.Float32, 10, 100)
	require.NoError(t, err)
	assert.Equal(t, dev.DeviceID(), a.Device())
	k, err := kernels.New(dev)
	require.NoError(t, err)
	defer k.Close()
	before := dev.Ledger().Snapshot()
	require.NoError(t, k.Scale(a, 2))
	require.NoError(t, dev.Synchronize())
	for i, x := range b.Float32() {
		require.Equal(t, 2*want[i], x, "element %d", i)
	}
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Zero(t, diff.Copied().Bytes, "the kernel worked on host memory in place")
}

func TestRegister(t *testing.T) {
	dev := testdev.Open(t)
	mmapped, err := syscall.Mmap(-1, 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	defer syscall.Munmap(mmapped)
	for _, tc := range []struct {
		name string
		mem  []byte
	}{
		{"mmap", mmapped},
		{"go heap", make([]byte, 3*4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := testdev.RandomBytes(len(tc.mem))
			copy(tc.mem, want)
			b, err := pinned.Register(dev, tc.mem, pinned.Mapped)
			require.NoError(t, err)
			assert.True(t, b.Registered())
			assert.Equal(t, int64(len(tc.mem)), dev.Ledger().Current(accounting.Registered))
			runtime.GC() // registered Go memory is pinned: still there after a collection
			d, err := dev.Malloc(int64(len(tc.mem)))
			require.NoError(t, err)
			before := dev.Ledger().Snapshot()
			require.NoError(t, dev.CopyHtoD(d, b.Bytes()))
			got := make([]byte, len(tc.mem))
			require.NoError(t, dev.CopyDtoH(got, d))
			assert.Equal(t, want, got)
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(len(tc.mem)), diff.Copies[accounting.HtoD][accounting.PathPinned].Bytes, "registered memory is page-locked")
			require.NoError(t, dev.Free(d))

			_, err = pinned.Register(dev, tc.mem[100:200], 0)
			assert.ErrorIs(t, err, driver.ErrInvalidValue, "already registered")
			require.NoError(t, b.Unregister())
			assert.Zero(t, dev.Ledger().Current(accounting.Registered))
			assert.Equal(t, want, tc.mem, "unregistering leaves the memory as it was")
		})
	}
	_, err = pinned.Register(dev, mmapped, pinned.WriteCombined)
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "write-combined needs Alloc")
	_, err = pinned.Register(dev, nil, 0)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	b, err := pinned.Alloc(dev, 100, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, b.Unregister(), driver.ErrInvalidPointer, "allocated memory is freed, not unregistered")
	require.NoError(t, b.Free())
}

// Freeing a buffer that an async copy still uses is refused, and frees
// nothing, until the copy is done.
func TestFreeWhileBusy(t *testing.T) {
	dev := testdev.Open(t)
	b, err := pinned.Alloc(dev, 4096, 0)
	require.NoError(t, err)
	w1, w2 := new(work), new(work)
	require.NoError(t, b.Guard(w1))
	require.NoError(t, b.Guard(w2))
	busy, err := b.Busy()
	require.NoError(t, err)
	assert.True(t, busy)
	err = b.Free()
	require.ErrorIs(t, err, pinned.ErrBusy)
	assert.Contains(t, err.Error(), "2 async copies")
	assert.Equal(t, int64(4096), dev.Ledger().Current(accounting.Pinned), "nothing was freed")
	assert.NotNil(t, b.Bytes(), "the memory is still usable")

	w1.done.Store(true)
	assert.ErrorIs(t, b.Free(), pinned.ErrBusy, "one copy is still running")
	w2.done.Store(true)
	require.NoError(t, b.Free())
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
	assert.ErrorIs(t, b.Guard(new(work)), pinned.ErrFreed)
}

// failing is async work whose query fails.
type failing struct{}

func (failing) Done() (bool, error) { return true, errors.New("query failed") }
func (failing) Wait() error         { return nil }

func TestFreeReportsQueryErrors(t *testing.T) {
	dev := testdev.Open(t)
	b, err := pinned.Alloc(dev, 4096, 0)
	require.NoError(t, err)
	require.NoError(t, b.Guard(failing{}))
	assert.ErrorContains(t, b.Free(), "query failed")
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "the first Free frees, and reports the error")
	require.NoError(t, b.Free(), "the error is reported once")
}

// The typed views hold as many whole elements as fit: a buffer of exactly
// one element holds it, one a byte short holds none, and a write through a
// view is in the buffer's bytes.
func TestTypedViews(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		name  string
		bytes int64
	}{
		{"one element", 8},
		{"a byte short", 7},
		{"some and a part", 8*int64(3+rand.IntN(100)) + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := pinned.Alloc(dev, tc.bytes, 0)
			require.NoError(t, err)
			defer func() { require.NoError(t, b.Free()) }()
			want := int(tc.bytes / 8)
			assert.Len(t, b.Float64(), want)
			assert.Len(t, b.Complex64(), want)
			if want == 0 {
				assert.Nil(t, b.Float64())
				return
			}
			x := rand.Float64() + 1
			b.Float64()[want-1] = x
			assert.Equal(t, math.Float64bits(x), binary.LittleEndian.Uint64(b.Bytes()[8*(want-1):]), "the last element is the buffer's last whole 8 bytes")
		})
	}
}
