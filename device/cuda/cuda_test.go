//go:build cuda

package cuda

// These tests need a GPU: a binary built with -tags cuda cannot start
// without one (gorgonia.org/cu's init exits). The backend contract tests
// that sim also passes live in package device (backend_test.go) and run
// here through internal/testdev; these cover what only the real driver has.

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

func open(t testing.TB) *Device {
	t.Helper()
	d, err := Open(0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func TestOpenAndInfo(t *testing.T) {
	d := open(t)
	i := d.Info()
	t.Logf("%+v", i)
	assert.Equal(t, "cuda:0", i.Name)
	assert.Equal(t, "cuda", i.Backend)
	assert.Contains(t, i.ContextFlags, "map_host", "CU_CTX_MAP_HOST is set on the primary context")
	assert.True(t, i.CanMapHost)
	assert.NotEmpty(t, i.Driver)
	assert.Greater(t, i.TotalMemory, int64(0))

	_, err := Open(1 << 20)
	assert.ErrorIs(t, err, driver.ErrNoDevice)
}

func TestDriverOutOfMemoryIsTheLedgersType(t *testing.T) {
	d := open(t)
	_, total, err := d.MemInfo()
	require.NoError(t, err)
	_, err = d.Malloc(2 * total)
	require.ErrorIs(t, err, driver.ErrOutOfMemory)
	var oom *accounting.OutOfMemoryError
	require.True(t, errors.As(err, &oom))
	assert.False(t, oom.ByLimit, "the driver refused it, not a limit")
	assert.Equal(t, total, oom.DeviceTotal)
	assert.Zero(t, d.Ledger().Current(accounting.Device))

	require.NoError(t, d.Ledger().SetLimit(accounting.Device, 1<<20))
	_, err = d.Malloc(2 << 20)
	require.True(t, errors.As(err, &oom))
	assert.True(t, oom.ByLimit)
}

func TestPointerInfo(t *testing.T) {
	d := open(t)
	p, err := d.Malloc(1 << 20)
	require.NoError(t, err)
	defer d.Free(p)
	info, err := d.PointerInfo(p + 4096)
	require.NoError(t, err)
	assert.Equal(t, devarray.CUDA, info.Kind)
	assert.Equal(t, p, info.Base, "the allocation's start")
	assert.GreaterOrEqual(t, info.Size, int64(1<<20))

	h, err := d.HostAlloc(1<<16, driver.Mapped)
	require.NoError(t, err)
	defer d.HostFree(h)
	info, err = d.PointerInfo(devarray.Ptr(uintptr(ptrOf(h.Bytes))))
	require.NoError(t, err)
	assert.Equal(t, devarray.CUDAHost, info.Kind)

	goMem := make([]byte, 64)
	_, err = d.PointerInfo(devarray.Ptr(uintptr(ptrOf(goMem))))
	assert.ErrorIs(t, err, driver.ErrInvalidPointer, "pageable Go memory is unknown to the driver")
}

func TestRegisterMmapMemory(t *testing.T) {
	d := open(t)
	mem, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	for i := range mem {
		mem[i] = byte(i * 7)
	}
	h, err := d.Register(mem, driver.Mapped)
	require.NoError(t, err)
	assert.NotZero(t, h.DevPtr)
	assert.Equal(t, int64(1<<20), d.Ledger().Current(accounting.Registered))

	p, err := d.Malloc(1 << 20)
	require.NoError(t, err)
	defer d.Free(p)
	require.NoError(t, d.CopyHtoD(p, mem))
	snap := d.Ledger().Snapshot()
	assert.Equal(t, int64(1<<20), snap.Copies[accounting.HtoD][accounting.PathPinned].Bytes, "registered memory takes the pinned path")
	require.NoError(t, d.Unregister(h))
	assert.Zero(t, d.Ledger().Current(accounting.Registered))
	assert.ErrorIs(t, d.Unregister(h), driver.ErrInvalidPointer)
}

func TestIPCHandle(t *testing.T) {
	d := open(t)
	p, err := d.Malloc(1 << 20)
	require.NoError(t, err)
	defer d.Free(p)
	h, base, size, err := d.IPCExport(p + 4096)
	require.NoError(t, err)
	assert.NotEqual(t, IPCHandle{}, h)
	assert.Equal(t, p, base, "the handle names the whole allocation")
	assert.GreaterOrEqual(t, size, int64(1<<20))
	_, _, err = d.IPCOpen(h)
	assert.Error(t, err, "a process cannot open its own handle")
	_, _, err = d.IPCOpen(IPCHandle{1, 2, 3})
	assert.Error(t, err, "garbage is refused")
	assert.ErrorIs(t, d.IPCClose(p), driver.ErrInvalidPointer, "only opened memory is closed")
}

func TestErrorMapping(t *testing.T) {
	for _, tt := range []struct {
		code int
		kind error
	}{
		{codeOutOfMemory, driver.ErrOutOfMemory},
		{codeInvalidValue, driver.ErrInvalidValue},
		{codeNotReady, driver.ErrNotReady},
		{codeNoDevice, driver.ErrNoDevice},
		{codeNotMapped, driver.ErrNotMapped},
		{codeContextIsDestroyed, driver.ErrClosed},
	} {
		err := check(tt.code)
		assert.ErrorIs(t, err, tt.kind, "%v", err)
		assert.Contains(t, err.Error(), "CUDA_ERROR_")
	}
	assert.NoError(t, check(0))
	assert.ErrorIs(t, fromCu(cu.OutOfMemory), driver.ErrOutOfMemory, "gorgonia's errors map the same way")
}

// BenchmarkBareDriverCall is the baseline: one cheap driver call
// (cuDriverGetVersion) through cgo, with no context handling.
func BenchmarkBareDriverCall(b *testing.B) {
	for b.Loop() {
		cu.Version()
	}
}

// BenchmarkBoundDriverCall is the same call made the way the backend makes
// every call: lock the OS thread, make the context current, call, unlock.
// The difference from BenchmarkBareDriverCall is the per-call overhead of
// the context-thread design.
func BenchmarkBoundDriverCall(b *testing.B) {
	d := open(b)
	for b.Loop() {
		d.call(func() error { cu.Version(); return nil })
	}
}

// BenchmarkBoundDriverCallParallel runs bound calls from many goroutines.
func BenchmarkBoundDriverCallParallel(b *testing.B) {
	d := open(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d.call(func() error { cu.Version(); return nil })
		}
	})
}

// BenchmarkCopyDtoD256MiB times device-to-device copies with events and
// reports GB/s (bytes read + written counted once, as PyTorch's peer script does).
func BenchmarkCopyDtoD256MiB(b *testing.B) {
	d := open(b)
	const n = 256 << 20
	src, err := d.Malloc(n)
	require.NoError(b, err)
	defer d.Free(src)
	dst, err := d.Malloc(n)
	require.NoError(b, err)
	defer d.Free(dst)
	require.NoError(b, d.Memset(src, 0x5a, n))
	s, err := d.NewStream()
	require.NoError(b, err)
	defer s.Close()
	start, _ := d.NewEvent()
	end, _ := d.NewEvent()
	defer start.Close()
	defer end.Close()
	var total time.Duration
	for b.Loop() {
		require.NoError(b, s.Record(start))
		require.NoError(b, s.CopyDtoDAsync(dst, src, n))
		require.NoError(b, s.Record(end))
		require.NoError(b, end.Synchronize())
		el, err := end.Elapsed(start)
		require.NoError(b, err)
		total += el
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds()/1e9, "GB/s")
}
