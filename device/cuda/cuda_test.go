//go:build cuda

package cuda

// These tests need a GPU, and skip when none answers (init_test.go checks
// what happens then: the binary starts, and Open is an error). The backend
// contract tests that sim also passes live in package device
// (backend_test.go) and run here through internal/testdev; these cover what
// only the real driver has.

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
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
	skipWithoutGPU(t)
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
	assert.ErrorIs(t, err, driver.ErrOwnIPCHandle, "a process cannot open its own handle")
	assert.NotErrorIs(t, err, driver.ErrClosed, "CUDA_ERROR_INVALID_CONTEXT here does not mean closed")
	_, _, err = d.IPCOpen(IPCHandle{1, 2, 3})
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "garbage is refused")
	assert.ErrorIs(t, d.IPCClose(p), driver.ErrInvalidPointer, "only opened memory is closed")
}

// The PTX of a kernel that does nothing, and of one that does not compile.
const (
	noopPTX   = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry noop()\n{\n\tret;\n}\n"
	brokenPTX = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry broken()\n{\n\tnot_an_instruction %r1;\n}\n"
)

func TestModuleLoadedOncePerDevice(t *testing.T) {
	skipWithoutGPU(t)
	d, err := Open(0)
	require.NoError(t, err)
	defer d.Close()
	m1, err := d.LoadModule(noopPTX)
	require.NoError(t, err)
	m2, err := d.LoadModule(noopPTX)
	require.NoError(t, err)
	m3, err := d.LoadModule(strings.Clone(noopPTX))
	require.NoError(t, err)
	img := m1.(*module).img
	assert.Same(t, img, m2.(*module).img, "a second load of the image is the same module")
	assert.Same(t, img, m3.(*module).img, "the same bytes elsewhere are the same module")
	assert.Equal(t, 3, d.mods.refs(noopPTX))

	f2, err := m2.Function("noop")
	require.NoError(t, err)
	require.NoError(t, m1.Close())
	require.NoError(t, m1.Close(), "closing twice is harmless")
	assert.Equal(t, 2, d.mods.refs(noopPTX))
	_, err = m1.Function("noop")
	assert.ErrorIs(t, err, driver.ErrClosed, "a closed handle has no functions")
	require.NoError(t, f2.Launch([3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, nil, nil), "the module stays loaded for the other handles")
	require.NoError(t, d.Synchronize())
	require.NoError(t, m2.Close())
	require.NoError(t, m3.Close())
	assert.Zero(t, d.mods.refs(noopPTX))
	m4, err := d.LoadModule(noopPTX)
	require.NoError(t, err)
	assert.Same(t, img, m4.(*module).img, "with no handle open the module is still loaded")
	f4, err := m4.Function("noop")
	require.NoError(t, err)

	require.NoError(t, d.Close())
	assert.ErrorIs(t, f4.Launch([3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, nil, nil), driver.ErrClosed, "the device's close unloads it")
	_, err = d.LoadModule(noopPTX)
	assert.ErrorIs(t, err, driver.ErrClosed)
}

func TestModuleLoadErrorShowsJITLog(t *testing.T) {
	d := open(t)
	_, err := d.LoadModule(brokenPTX)
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "PTX", "the error names the image's kind")
	assert.Contains(t, err.Error(), "JIT error log", "the error carries the JIT's log")
	assert.Contains(t, err.Error(), "line", "the log points at the bad line")
	_, err = d.LoadModule("")
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}

func TestPrimaryContextActiveAfterOpen(t *testing.T) {
	d := open(t)
	flags, active, err := d.dev.PrimaryCtxState()
	require.NoError(t, err)
	assert.Equal(t, 1, active)
	t.Logf("primary context flags from cuDevicePrimaryCtxGetState: %#x; from cuCtxGetFlags: %s", uint32(flags), d.Info().ContextFlags)
	other := open(t) // opens the active context: retainPrimary sets no flags
	assert.True(t, other.Info().CanMapHost)
}

// The per-thread default stream (handle 2, CU_STREAM_PER_THREAD) is the
// calling thread's: the driver resolves the handle on the OS thread that
// makes each call, which Device.call keeps the calling goroutine on, so a
// goroutine locked to its thread (or a C caller through libcuarray) uses
// its own per-thread stream throughout.
func TestPerThreadDefaultStream(t *testing.T) {
	d := open(t)
	p, err := d.Malloc(1 << 20)
	require.NoError(t, err)
	defer d.Free(p)
	for _, h := range []uintptr{driver.LegacyDefaultStream, driver.PerThreadDefaultStream} {
		done := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			done <- func() error {
				s, err := d.ExternalStream(h)
				if err != nil {
					return err
				}
				defer s.Close()
				if s.Handle() != h {
					return fmt.Errorf("handle %d became %d", h, s.Handle())
				}
				src := make([]byte, 1<<20)
				for i := range src {
					src[i] = byte(i*7 + int(h))
				}
				dst := make([]byte, len(src))
				ev, err := d.NewEvent()
				if err != nil {
					return err
				}
				defer ev.Close()
				for _, step := range []func() error{
					func() error { return s.CopyHtoDAsync(p, src) },
					func() error { return s.CopyDtoHAsync(dst, p) },
					func() error { return s.Record(ev) },
					ev.Synchronize,
				} {
					if err := step(); err != nil {
						return err
					}
				}
				if !bytes.Equal(src, dst) {
					return fmt.Errorf("stream %d: the bytes read back differ", h)
				}
				return nil
			}()
		}()
		require.NoError(t, <-done, "stream handle %d", h)
	}
}

func TestClosedEventIsErrClosed(t *testing.T) {
	d := open(t)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	start, err := d.NewEvent()
	require.NoError(t, err)
	end, err := d.NewEvent()
	require.NoError(t, err)
	defer end.Close()
	require.NoError(t, s.Record(start))
	require.NoError(t, s.Record(end))
	require.NoError(t, end.Synchronize())
	require.NoError(t, start.Close())
	assert.ErrorIs(t, s.Record(start), driver.ErrClosed)
	assert.ErrorIs(t, s.WaitEvent(start), driver.ErrClosed)
	_, err = end.Elapsed(start)
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, start.Synchronize(), driver.ErrClosed)
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
		{codeIllegalAddress, driver.ErrContextFailed},
		{codeLaunchFailed, driver.ErrContextFailed},
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
	var le *cu.LoadError
	if errors.As(cu.Init(), &le) {
		b.Skipf("needs the CUDA driver: %v", le)
	}
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
