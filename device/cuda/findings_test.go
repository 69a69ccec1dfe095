//go:build cuda

package cuda

// Tests of defects found by reading the backend against the CUDA Driver API
// documentation, one per defect, numbered as they were reported. They run
// on a GPU and on the emulated driver (-tags cuda,cudaemu); those that need
// the emulated driver to play a different driver are in
// findings_emulated_test.go.

import (
	"bytes"
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// randomBytes returns n fresh random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

// TestFinding05ClosedDeviceRefusesEveryCall: after Close every call is
// driver.ErrClosed and touches nothing, also while another holder (here a
// second Device, as PyTorch or CuPy would be) keeps the primary context
// alive, so that making the context current still succeeds.
func TestFinding05ClosedDeviceRefusesEveryCall(t *testing.T) {
	other := open(t) // another holder of the primary context
	d, err := Open(0)
	require.NoError(t, err)
	const n = 1 << 16
	p, err := d.Malloc(n)
	require.NoError(t, err)
	q, err := d.Malloc(n)
	require.NoError(t, err)
	src := randomBytes(n)
	require.NoError(t, d.CopyHtoD(p, src))
	ev, err := d.NewEvent()
	require.NoError(t, err)
	theirs, err := other.Malloc(n)
	require.NoError(t, err)
	defer other.Free(theirs)
	require.NoError(t, d.Close())
	assert.Zero(t, d.Ledger().Current(accounting.Device), "Close freed the memory")

	m2 := devarray.Memcpy2D{Dst: devarray.Place{Dev: q}, Src: devarray.Place{Dev: p}, DstPitch: 256, SrcPitch: 256, Width: 256, Height: 4}
	m3 := devarray.Memcpy3D{Dst: devarray.Place{Dev: q}, Src: devarray.Place{Dev: p}, DstPitch: 256, SrcPitch: 256,
		DstHeight: 4, SrcHeight: 4, Width: 256, Height: 4, Depth: 2}
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"CopyHtoD", func() error { return d.CopyHtoD(p, src) }},
		{"CopyDtoH", func() error { return d.CopyDtoH(make([]byte, n), p) }},
		{"CopyDtoD", func() error { return d.CopyDtoD(q, p, n) }},
		{"Memset", func() error { return d.Memset(p, 7, n) }},
		{"Memcpy2D", func() error { return d.Memcpy2D(m2) }},
		{"Memcpy3D", func() error { return d.Memcpy3D(m3) }},
		{"CopyPeer from the closed device", func() error { return d.CopyPeer(theirs, other, p, n) }},
		{"CopyPeer to the closed device", func() error { return other.CopyPeer(p, d, theirs, n) }},
		{"Synchronize", d.Synchronize},
		{"MemInfo", func() error { _, _, err := d.MemInfo(); return err }},
		{"PointerInfo", func() error { _, err := d.PointerInfo(p); return err }},
		{"IPCExport", func() error { _, _, _, err := d.IPCExport(p); return err }},
		{"Peek", func() error { _, err := d.Peek(p, n); return err }},
		{"NewEvent", func() error { _, err := d.NewEvent(); return err }},
		{"NewStream", func() error { _, err := d.NewStream(); return err }},
		{"ExternalStream", func() error { _, err := d.ExternalStream(driver.LegacyDefaultStream); return err }},
		{"Event.Synchronize of an event made before Close", ev.Synchronize},
		{"Event.Query of an event made before Close", func() error { _, err := ev.Query(); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), driver.ErrClosed, "a call on a closed device")
		})
	}
	assert.NoError(t, ev.Close(), "closing an event of a closed device is harmless")
	assert.NoError(t, other.Memset(theirs, 1, n), "the other holder's context still works")
	assert.Zero(t, d.Ledger().Current(accounting.Device))
}

// TestFinding06Async2DCopiesTakeThePitchesTheSynchronousOnesTake: a 2-D
// device-to-device copy queued on a stream accepts every pitch the
// synchronous copy accepts (cuMemcpy2DAsync may refuse pitches not from
// cuMemAllocPitch within a device; the emulated driver refuses those not a
// multiple of 32) and copies the same bytes.
func TestFinding06Async2DCopiesTakeThePitchesTheSynchronousOnesTake(t *testing.T) {
	d := open(t)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer s.Close()
	for _, tt := range []struct {
		name                 string
		width, height        int64
		srcPitch, dstPitch   int64
		srcOffset, dstOffset int64
	}{
		{"odd pitches", 100, 7, 100, 132, 0, 0},
		{"pitches of 33 and 40", 33, 5, 33, 40, 0, 0},
		{"a pitch of 80", 64, 3, 96, 80, 0, 0},
		{"unaligned starts", 50, 6, 77, 65, 3, 5},
		{"aligned pitches", 64, 4, 256, 128, 0, 0},
		{"one row", 999, 1, 1000, 1000, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srcBytes := tt.srcOffset + tt.srcPitch*tt.height
			dstBytes := tt.dstOffset + tt.dstPitch*tt.height
			src, err := d.Malloc(srcBytes)
			require.NoError(t, err)
			defer d.Free(src)
			data := randomBytes(int(srcBytes))
			require.NoError(t, d.CopyHtoD(src, data))
			want := make([]byte, dstBytes)
			for r := range tt.height {
				copy(want[tt.dstOffset+r*tt.dstPitch:][:tt.width], data[tt.srcOffset+r*tt.srcPitch:][:tt.width])
			}
			p := devarray.Memcpy2D{
				Src: devarray.Place{Dev: src + devarray.Ptr(tt.srcOffset)}, SrcPitch: tt.srcPitch,
				DstPitch: tt.dstPitch, Width: tt.width, Height: tt.height,
			}
			for _, async := range []bool{false, true} {
				dst, err := d.Malloc(dstBytes)
				require.NoError(t, err)
				defer d.Free(dst)
				require.NoError(t, d.Memset(dst, 0, dstBytes))
				p.Dst = devarray.Place{Dev: dst + devarray.Ptr(tt.dstOffset)}
				if async {
					require.NoError(t, s.Memcpy2DAsync(p), "the async copy takes what the synchronous one takes")
					require.NoError(t, s.Synchronize())
				} else {
					require.NoError(t, d.Memcpy2D(p))
				}
				got := make([]byte, dstBytes)
				require.NoError(t, d.CopyDtoH(got, dst))
				assert.True(t, bytes.Equal(want, got), "async %v: the rows arrived, and nothing else was written", async)
			}
		})
	}
}

// TestFinding07PerThreadDefaultStreamBuildIsRefused: the backend waits for
// the legacy default stream after the driver's synchronous calls (settle),
// and orders its streams with it; built with
// -DCUDA_API_PER_THREAD_DEFAULT_STREAM those calls would run on the
// per-thread stream instead and the waits would miss them. So that build
// must not compile, and must say why.
func TestFinding07PerThreadDefaultStreamBuildIsRefused(t *testing.T) {
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gocmd); err != nil {
		t.Skipf("needs the go command to compile the package: %v", err)
	}
	for _, tt := range []struct {
		name, cflags string
		compiles     bool
	}{
		{"legacy default stream", "", true},
		{"per-thread default stream", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(gocmd, "build", "-tags", "cuda", "-o", os.DevNull, ".")
			cmd.Env = append(os.Environ(), "CGO_CFLAGS="+strings.TrimSpace("-O2 -g "+tt.cflags), "GOFLAGS=")
			out, err := cmd.CombinedOutput()
			t.Logf("CGO_CFLAGS=%q go build -tags cuda: %v\n%s", tt.cflags, err, out)
			if tt.compiles {
				require.NoError(t, err)
				return
			}
			require.Error(t, err, "the build with the per-thread default stream must fail")
			assert.Contains(t, string(out), "CUDA_API_PER_THREAD_DEFAULT_STREAM", "the error names the macro")
			assert.Contains(t, string(out), "legacy default stream", "and says why")
		})
	}
}

// TestFinding10ErrorMapping: every result after which CUDA is unusable in
// the process is driver.ErrContextFailed, and CUDA_ERROR_INVALID_CONTEXT
// from a call made with the device's context current (a handle of another
// context, never this device being closed) is not driver.ErrClosed.
func TestFinding10ErrorMapping(t *testing.T) {
	for _, tt := range []struct {
		name string
		code int
		kind error
	}{
		// cuda.h: "This leaves the process in an inconsistent state and any
		// further CUDA work will return the same error."
		{"CUDA_ERROR_EXTERNAL_DEVICE", 911, driver.ErrContextFailed},
		// cuda.h: "To continue using CUDA, the process must be terminated and relaunched."
		{"CUDA_ERROR_MPS_CLIENT_TERMINATED", 810, driver.ErrContextFailed},
		{"CUDA_ERROR_CONTEXT_IS_DESTROYED", codeContextIsDestroyed, driver.ErrClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, check(tt.code), tt.kind)
		})
	}
	t.Run("CUDA_ERROR_INVALID_CONTEXT on an open device", func(t *testing.T) {
		d := open(t)
		err := d.call(func() error { return check(codeInvalidContext) })
		require.Error(t, err)
		assert.NotErrorIs(t, err, driver.ErrClosed, "the device is open and its context current: %v", err)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "a handle of another context is an invalid argument")
		require.NoError(t, d.Close())
		assert.ErrorIs(t, d.call(func() error { return nil }), driver.ErrClosed, "once closed, it is")
	})
	t.Run("a missing kernel is not a missing driver function", func(t *testing.T) {
		d := open(t)
		m, err := d.LoadModule(noopPTX)
		require.NoError(t, err)
		defer m.Close()
		_, err = m.Function("absent")
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "%v", err)
		assert.NotErrorIs(t, err, errors.ErrUnsupported)
	})
}
