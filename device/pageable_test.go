package device_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Pageable host memory used in place (devarray.FromPageable), on sim
// devices of every pageable-access option and on the test device (the
// emulated driver's answer is its option's; the cuda package's
// pageable_emulated_test.go runs it with pageable-access=hmm). A device
// with access (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS 1, "Device
// supports coherently accessing pageable memory without calling
// cudaHostRegister on it") runs a kernel on a Go slice in place; one
// without refuses it.

// openPageableSim opens a sim device with the option pageable-access=access.
func openPageableSim(t *testing.T, access string) device.Device {
	t.Helper()
	dev, err := device.Open("sim:0?mem=64MiB&pageable-access=" + access)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	return dev
}

// namedDevice is a device a table-driven test runs on.
type namedDevice struct {
	name string
	dev  device.Device
}

// pageableDevices are the devices a test runs on: sim with each access,
// and the test device.
func pageableDevices(t *testing.T) []namedDevice {
	return []namedDevice{
		{"sim none", openPageableSim(t, "none")},
		{"sim hmm", openPageableSim(t, "hmm")},
		{"sim ats", openPageableSim(t, "ats")},
		{"test", testdev.Open(t)},
	}
}

// The option pageable-access sets what the device reports; none is the
// default, as on most GPUs; anything else is a bad spec.
func TestPageableAccessOption(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want driver.PageableAccess
	}{
		{"sim:0?mem=64MiB", driver.PageableNone},
		{"sim:0?mem=64MiB&pageable-access=none", driver.PageableNone},
		{"sim:0?mem=64MiB&pageable-access=hmm", driver.PageableHMM},
		{"sim:0?mem=64MiB&pageable-access=ats", driver.PageableATS},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			dev, err := device.Open(tc.spec)
			require.NoError(t, err)
			defer dev.Close()
			assert.Equal(t, tc.want, dev.PageableAccess())
		})
	}
	for _, bad := range []string{"1", "yes", "HMM", ""} {
		_, err := device.Open("sim:0?pageable-access=" + bad)
		assert.ErrorIs(t, err, device.ErrBadSpec, "pageable-access=%q", bad)
	}
}

// A kernel (saxpy, y = a·x + y) reads one Go slice and updates another in
// place: the slices hold the result, and the ledger counts no allocation
// and no copy. Free releases the slices: the device no longer reaches them.
func TestPageableKernelInPlace(t *testing.T) {
	r := rand.For(t)
	for _, tc := range pageableDevices(t) {
		dev := tc.dev
		t.Run(tc.name, func(t *testing.T) {
			if !dev.PageableAccess().Supported() {
				t.Skipf("%s: no pageable memory access (TestPageableRefused checks the refusal)", dev.Info().Name)
			}
			saxpy := saxpyKernel(t, dev)
			n := 1 + r.IntN(4096)
			xs, ys := randomFloatsFrom(r, n), randomFloatsFrom(r, n)
			want := make([]float32, n)
			a := r.Float32()*4 - 2
			for i := range want {
				want[i] = fma32(a, xs[i], ys[i])
			}
			before := dev.Ledger().Snapshot()
			x, err := devarray.FromPageable(dev, xs)
			require.NoError(t, err)
			y, err := devarray.FromPageable(dev, ys)
			require.NoError(t, err)
			assert.True(t, x.Pageable())
			assert.False(t, x.Owned(), "the memory is the program's")
			assert.Equal(t, devarray.Ptr(uintptr(unsafe.Pointer(&xs[0]))), x.Ptr(), "the array's pointer is the slice's host address")
			require.NoError(t, saxpy.Launch(kernel.Grid1D(int64(n), 256),
				kernel.F32(a), kernel.In(x).Of(devarray.Float32), kernel.InOut(y).Of(devarray.Float32), kernel.I32(int32(n))))
			require.NoError(t, dev.Synchronize())
			assert.Equal(t, want, ys, "the kernel updated the Go slice in place")
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			for k := accounting.Kind(0); k < accounting.NumKinds; k++ {
				assert.Zero(t, diff.Kinds[k].Allocs, "no %v allocation", k)
			}
			for d := accounting.Direction(0); d < accounting.NumDirections; d++ {
				assert.Zero(t, diff.CopyTotal(d).Bytes, "no %v copy", d)
			}
			p := y.Ptr()
			require.NoError(t, x.Free())
			require.NoError(t, y.Free())
			assert.ErrorIs(t, y.Err(), devarray.ErrFreed)
			if testdev.IsSim(dev) {
				err := dev.CopyDtoH(make([]byte, 4), p)
				assert.ErrorIs(t, err, driver.ErrInvalidPointer, "after Free the device no longer reaches the slice")
			}
		})
	}
}

// Where the device has no pageable memory access, FromPageable refuses
// with ErrNoPageableAccess, which names the ways that work, and leaves
// the ledger as it was.
func TestPageableRefused(t *testing.T) {
	for _, tc := range pageableDevices(t) {
		dev := tc.dev
		t.Run(tc.name, func(t *testing.T) {
			if dev.PageableAccess().Supported() {
				t.Skipf("%s has pageable memory access", dev.Info().Name)
			}
			host := randomFloatsFrom(rand.For(t), 256)
			before := dev.Ledger().Snapshot()
			a, err := devarray.FromPageable(dev, host, 16, 16)
			assert.Nil(t, a)
			require.ErrorIs(t, err, devarray.ErrNoPageableAccess)
			assert.ErrorIs(t, err, driver.ErrNoPageableAccess)
			assert.Contains(t, err.Error(), "pinned")
			assert.Contains(t, err.Error(), "managed")
			assert.Equal(t, before.Kinds, dev.Ledger().Snapshot().Kinds)
		})
	}
}

// Hostile input is refused with a typed error, nothing declared: nil and
// empty slices, a shape that does not match, a misaligned address, an
// unknown dtype, no backend.
func TestPageableHostile(t *testing.T) {
	dev := openPageableSim(t, "hmm")
	r := rand.For(t)
	b := make([]byte, 64+r.IntN(64)*8)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	for _, tc := range []struct {
		name  string
		b     devarray.Backend
		host  []byte
		dtype devarray.DType
		shape []int
		want  error
	}{
		{"nil slice", dev, nil, devarray.Uint8, []int{0}, devarray.ErrHostSize},
		{"empty slice", dev, b[:0], devarray.Uint8, []int{0}, devarray.ErrHostSize},
		{"shape too large", dev, b[:64], devarray.Float32, []int{17}, devarray.ErrHostSize},
		{"shape too small", dev, b[:64], devarray.Float32, []int{4, 3}, devarray.ErrHostSize},
		{"negative shape", dev, b[:64], devarray.Float32, []int{-16}, devarray.ErrShape},
		{"misaligned float64", dev, b[1:57], devarray.Float64, []int{7}, devarray.ErrMisaligned},
		{"unknown dtype", dev, b[:64], devarray.DType(200), []int{64}, devarray.ErrDType},
		{"no backend", nil, b[:64], devarray.Uint8, []int{64}, devarray.ErrNoBackend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := devarray.FromPageableBytes(tc.b, tc.host, tc.dtype, tc.shape...)
			assert.Nil(t, a)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	_, err := dev.UsePageable(nil)
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "no bytes to use")
	assert.ErrorIs(t, dev.ReleasePageable(b), driver.ErrInvalidPointer, "memory never declared")
}

// A kernel that runs past the slice it was given faults, as one that
// touches an address outside every allocation does: the bytes after the
// slice, in the same Go array, were not declared (sim knows only the
// declared ranges; a GPU with HMM would read them). The fault is sticky:
// the device is one of the test's own.
func TestPageableKernelBeyondSliceFaults(t *testing.T) {
	dev := openPageableSim(t, "hmm")
	r := rand.For(t)
	saxpy := saxpyKernel(t, dev)
	n := 256 + r.IntN(256)
	xs, ys := randomFloatsFrom(r, n+64), randomFloatsFrom(r, n+64)
	x, err := devarray.FromPageable(dev, xs[:n])
	require.NoError(t, err)
	y, err := devarray.FromPageable(dev, ys[:n])
	require.NoError(t, err)
	err = saxpy.Launch(kernel.Grid1D(int64(n+64), 256),
		kernel.F32(2), kernel.In(x).Of(devarray.Float32), kernel.InOut(y).Of(devarray.Float32), kernel.I32(int32(n+64)))
	err = errors.Join(err, dev.Synchronize())
	require.ErrorIs(t, err, driver.ErrContextFailed, "a read past the declared slice is an illegal address")
	assert.Contains(t, err.Error(), "illegal address")
}

// An array's own CopyFrom and CopyTo refuse host memory that shares bytes
// with a pageable array used in place, as transfer.Copy does: the
// driver's copies are undefined for memory that overlaps. The slice is
// left as it was; host memory next to it, sharing no byte, copies. On
// memory that is not pageable-in-place, the check never refuses.
func TestPageableCopySharingHost(t *testing.T) {
	dev := openPageableSim(t, "hmm")
	r := rand.For(t)
	n := 512 + r.IntN(512)
	mem := make([]float32, 2*n)
	for i := range mem {
		mem[i] = r.Float32()
	}
	whole, err := devarray.FromPageable(dev, mem[:n])
	require.NoError(t, err)
	defer whole.Free()
	shift := 1 + r.IntN(n/2)
	head, err := whole.Slice(0, 0, n-shift)
	require.NoError(t, err)
	bytesOf := func(f []float32) []byte { return devarray.AsBytes(f) }
	for _, tc := range []struct {
		name string
		a    *devarray.DevArray
		host []byte
		from bool
		ok   bool
	}{
		{"from itself", whole, bytesOf(mem[:n]), true, false},
		{"into itself", whole, bytesOf(mem[:n]), false, false},
		{"its head from its tail", head, bytesOf(mem[shift:n]), true, false},
		{"its head into its tail", head, bytesOf(mem[shift:n]), false, false},
		{"into its bytes shifted by one", whole, devarray.AsBytes(mem)[1 : 4*n+1], false, false},
		{"from the bytes that start at its last", whole, devarray.AsBytes(mem)[4*n-1 : 8*n-1], true, false},
		{"from the memory after it", whole, bytesOf(mem[n:]), true, true},
		{"into the memory after it", whole, bytesOf(mem[n:]), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]float32(nil), mem...)
			var err error
			if tc.from {
				err = tc.a.CopyFrom(tc.host)
			} else {
				err = tc.a.CopyTo(tc.host)
			}
			if tc.ok {
				require.NoError(t, err)
				copy(mem, before)
				return
			}
			assert.ErrorIs(t, err, devarray.ErrSharesMemory)
			assert.Equal(t, before, mem, "the slice is left as it was")
		})
	}
	assert.False(t, whole.SharesHost(uintptr(unsafe.Pointer(&mem[n])), 4), "the next byte after it")
	assert.True(t, whole.SharesHost(uintptr(unsafe.Pointer(&mem[n-1])), 4), "its last element")
	assert.False(t, whole.SharesHost(uintptr(unsafe.Pointer(&mem[0])), 0), "no bytes share nothing")
	dst := make([]float32, n)
	onDevice, err := devarray.FromHost(dev, dst)
	require.NoError(t, err)
	defer onDevice.Free()
	assert.False(t, onDevice.SharesHost(uintptr(unsafe.Pointer(&dst[0])), int64(4*n)), "device memory is no host memory")
}
