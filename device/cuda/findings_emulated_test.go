//go:build cuda && cudaemu && linux

package cuda

// Tests of reported defects that need the emulated driver to play a driver
// other than its default one (CUARRAY_EMULATED_DRIVER's version, map-host,
// lack, refuse, latency): each runs in a child process of this test binary,
// configured through the environment, since the driver reads its
// configuration once per process.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/driver"
)

// childTestEnv names the test a child process runs the body of.
const childTestEnv = "CUARRAY_FINDING_CHILD"

// inChild reports whether this process is the child that runs t's body.
// In the parent it runs t alone in a child of this test binary with the
// emulated driver configured as cfg (and the extra environment), requires
// it to pass, and returns false.
func inChild(t *testing.T, cfg string, env ...string) bool {
	t.Helper()
	if os.Getenv(childTestEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+strings.ReplaceAll(t.Name(), "/", "$/^")+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childTestEnv+"="+t.Name(), emulated.EnvVar+"="+cfg)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	t.Logf("child with %s=%q:\n%s", emulated.EnvVar, cfg, out)
	require.NoError(t, err, "the child failed")
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the child ran the test")
	return false
}

// TestFinding08MappedMemoryWithoutTheFlag: since CUDA 11.0 CU_CTX_MAP_HOST
// "no longer has any effect; all contexts behave as though the flag is
// enabled". A driver that does not report the bit still maps host memory,
// and Open neither sets flags on nor tears down the primary context for it;
// before CUDA 11 the flag decides, as before.
func TestFinding08MappedMemoryWithoutTheFlag(t *testing.T) {
	for _, tt := range []struct {
		name, cfg   string
		flagMatters bool
	}{
		{"CUDA 12.8", "map-host=false", false},
		{"CUDA 11.0", "map-host=false&version=11000", false},
		{"CUDA 10.2", "map-host=false&version=10020", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !inChild(t, tt.cfg) {
				return
			}
			require.NoError(t, Init())
			dev, err := cu.GetDevice(0)
			require.NoError(t, err)

			// Another library made the context active without the flag.
			_, err = dev.RetainPrimaryCtx()
			require.NoError(t, err)
			d, err := Open(0)
			require.NoError(t, err)
			t.Logf("another library's context: %+v", d.Info())
			h, err := d.HostAlloc(4096, driver.Mapped)
			if tt.flagMatters {
				assert.False(t, d.Info().CanMapHost)
				assert.ErrorIs(t, err, driver.ErrNotMapped, "before CUDA 11 a context without the flag cannot map")
			} else {
				assert.True(t, d.Info().CanMapHost, "every context maps host memory")
				require.NoError(t, err, "no false ErrNotMapped")
				assert.NotZero(t, h.DevPtr)
				require.NoError(t, d.HostFree(h))
			}
			require.NoError(t, d.Close())
			require.NoError(t, dev.ReleasePrimaryCtx())

			// cuarray activates the context itself.
			before, active, err := dev.PrimaryCtxState()
			require.NoError(t, err)
			require.Zero(t, active)
			emulated.ResetFailures()
			d, err = Open(0)
			require.NoError(t, err)
			t.Logf("cuarray's context: %+v", d.Info())
			after, _, err := dev.PrimaryCtxState()
			require.NoError(t, err)
			assert.True(t, d.Info().CanMapHost)
			if tt.flagMatters {
				assert.Equal(t, before|cu.MapHost, after, "before CUDA 11 Open sets the flag on an inactive context")
			} else {
				assert.Equal(t, before, after, "Open leaves the context's flags alone")
			}
			h, err = d.HostAlloc(4096, driver.Mapped|driver.Portable)
			require.NoError(t, err)
			p, err := d.Malloc(4096)
			require.NoError(t, err)
			want := randomBytes(4096)
			require.NoError(t, d.CopyHtoD(p, want))
			require.NoError(t, d.CopyDtoD(h.DevPtr, p, 4096), "the device writes the mapped memory")
			assert.True(t, bytes.Equal(want, h.Bytes))
			require.NoError(t, d.HostFree(h))
			require.NoError(t, d.Free(p))
			require.NoError(t, d.Close())
			assert.Empty(t, emulated.Failures(), "no driver call failed")
		})
	}
}

// TestFinding10MissingDriverFunction: a driver function the installed
// driver lacks is its own error, naming the function and the driver
// version it needs, errors.ErrUnsupported, and not driver.ErrInvalidValue,
// which a kernel name a module lacks is.
func TestFinding10MissingDriverFunction(t *testing.T) {
	if !inChild(t, "lack=cuIpcGetMemHandle,cuMemcpy3DAsync_v2&version=11040") {
		return
	}
	d := open(t)
	p, err := d.Malloc(1 << 16)
	require.NoError(t, err)
	defer d.Free(p)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	for _, tt := range []struct {
		name, symbol, needs string
		call                func() error
	}{
		{"IPCExport", "cuIpcGetMemHandle", "CUDA 4.1", func() error { _, _, _, err := d.IPCExport(p); return err }},
		{"Memcpy3DAsync", "cuMemcpy3DAsync_v2", "CUDA 3.2", func() error {
			return s.Memcpy3DAsync(devarray.Memcpy3D{Dst: devarray.Place{Dev: p + 4096}, Src: devarray.Place{Dev: p},
				DstPitch: 256, SrcPitch: 256, DstHeight: 2, SrcHeight: 2, Width: 256, Height: 2, Depth: 2})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			t.Log(err)
			assert.ErrorIs(t, err, errors.ErrUnsupported)
			assert.NotErrorIs(t, err, driver.ErrInvalidValue, "not an invalid argument")
			assert.Contains(t, err.Error(), tt.symbol, "the error names the function")
			assert.Contains(t, err.Error(), tt.needs, "and the driver it needs")
			assert.Contains(t, err.Error(), "CUDA 11.4", "and the driver installed")
		})
	}
	m, err := d.LoadModule(noopPTX)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Function("absent")
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "a missing kernel is an invalid name: %v", err)
	assert.NotErrorIs(t, err, errors.ErrUnsupported)
}

// TestFinding11AsyncCopyKeepsGoMemory: a driver that reads and writes
// pageable memory itself (HMM, ATS: the emulated driver writes an async
// copy's pageable destination when the copy runs) may use Go memory after
// the call returns, so the backend must keep the memory alive and in place
// until the copy is done, whether or not the caller still holds it.
func TestFinding11AsyncCopyKeepsGoMemory(t *testing.T) {
	if !inChild(t, "latency=300ms") {
		return
	}
	d := open(t)
	const n = 1 << 20
	p, err := d.Malloc(n)
	require.NoError(t, err)
	defer d.Free(p)
	require.NoError(t, d.CopyHtoD(p, randomBytes(n)))
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()

	// The caller queues a copy into a buffer and lets go of it.
	addr := func() uintptr {
		dst := make([]byte, n)
		require.NoError(t, s.CopyDtoHAsync(dst, p))
		return uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	}()
	runtime.GC()
	runtime.GC()
	var fresh [][]byte
	for range 32 {
		b := bytes.Repeat([]byte{0xee}, n)
		fresh = append(fresh, b)
		assert.NotEqual(t, addr, uintptr(unsafe.Pointer(unsafe.SliceData(b))),
			"the garbage collector gave away the memory an async copy is still writing")
	}
	require.NoError(t, s.Synchronize())
	for i, b := range fresh {
		assert.Equal(t, n, bytes.Count(b, []byte{0xee}), "buffer %d was overwritten by the device", i)
	}
	runtime.KeepAlive(fresh)
}

// TestFinding12RefusedIPCCloseKeepsTheLedgerRight: when the driver refuses
// cuIpcCloseMemHandle the mapping is still there, so it stays in the
// device's table and in the ledger; a later IPCClose tries again, and Close
// lets go of it in both.
func TestFinding12RefusedIPCCloseKeepsTheLedgerRight(t *testing.T) {
	const handleEnv = "CUARRAY_FINDING_IPC_HANDLE"
	if os.Getenv(childTestEnv) != t.Name() {
		d := open(t)
		p, err := d.Malloc(1 << 20)
		require.NoError(t, err)
		defer d.Free(p)
		h, _, _, err := d.IPCExport(p)
		require.NoError(t, err)
		inChild(t, "refuse=cuIpcCloseMemHandle", handleEnv+"="+hex.EncodeToString(h[:]))
		return
	}
	raw, err := hex.DecodeString(os.Getenv(handleEnv))
	require.NoError(t, err)
	var h IPCHandle
	require.Len(t, raw, len(h))
	copy(h[:], raw)
	d, err := Open(0)
	require.NoError(t, err)
	p, size, err := d.IPCOpen(h)
	require.NoError(t, err)
	assert.Equal(t, size, d.Ledger().Current(accounting.IPC))

	err = d.IPCClose(p)
	require.Error(t, err, "the driver refused")
	t.Log(err)
	assert.Equal(t, size, d.Ledger().Current(accounting.IPC), "the mapping is still counted")
	err = d.IPCClose(p)
	require.Error(t, err)
	assert.NotErrorIs(t, err, driver.ErrInvalidPointer, "the device still knows the mapping: it asks the driver again")
	t.Logf("Close: %v", d.Close())
	assert.Zero(t, d.Ledger().Current(accounting.IPC), "Close lets go of the mapping in the ledger as in the table")
}
