package gorgonia_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/fmtcheck"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop/gorgonia"
)

// TestFaultTensorEngine: the gorgonia engine over device memory after a
// sticky fault: Memclr, whose interface returns nothing, keeps its
// failure for Err (it cleared nothing); Alloc, Memset, Memcpy and Free
// report the fault; nothing panics, and Close frees the memory.
func TestFaultTensorEngine(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20, Latency: time.Millisecond})
	require.NoError(t, err)
	defer dev.Close()
	e := gorgonia.NewDeviceEngine(dev)
	mem, err := e.Alloc(256)
	require.NoError(t, err)
	other, err := e.Alloc(256)
	require.NoError(t, err)
	p := devarray.Ptr(mem.Uintptr())
	require.NoError(t, dev.CopyHtoD(p, testdev.RandomBytes(256)))
	e.Memclr(mem)
	require.NoError(t, e.Err(), "a clear that was done")
	got := make([]byte, 256)
	require.NoError(t, dev.CopyDtoH(got, p))
	assert.Equal(t, make([]byte, 256), got)

	dev.FailFault(1)
	e.Memclr(mem)
	assert.ErrorIs(t, e.Err(), device.ErrContextFailed, "the clear that faulted is reported")
	assert.NoError(t, e.Err(), "once")
	e.Memclr(mem)
	assert.ErrorIs(t, e.Err(), device.ErrContextFailed, "a clear after the fault is reported too")
	_, err = e.Alloc(64)
	assert.ErrorIs(t, err, device.ErrContextFailed)
	assert.ErrorIs(t, e.Memset(mem, float32(0)), device.ErrContextFailed)
	assert.ErrorIs(t, e.Memcpy(other, mem), device.ErrContextFailed)
	assert.ErrorIs(t, e.Free(mem, 256), device.ErrContextFailed)
	require.NoError(t, dev.Close())
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
}

// The engine prints in a line on the default sim device (4 GiB), open and
// after its Close; a nil engine prints as nil.
func TestFormatBounded(t *testing.T) {
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	require.Equal(t, int64(sim.DefaultMemory), dev.Info().TotalMemory, "the default sim device")
	defer dev.Close()
	engine := gorgonia.NewDeviceEngine(dev)
	for _, tc := range []struct {
		name string
		v    any
		want []string // in %v, then in %#v
	}{
		{"engine", engine, []string{"tensor engine on sim:0", "(*gorgonia.DeviceEngine)(0x"}},
		{"nil engine", (*gorgonia.DeviceEngine)(nil), []string{"tensor engine <nil>", "(*gorgonia.DeviceEngine)(nil)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := fmtcheck.Bounded(t, tc.v)
			assert.Contains(t, out["%v"], tc.want[0])
			assert.Contains(t, out["%#v"], tc.want[1])
		})
	}
	require.NoError(t, dev.Close())
	out := fmtcheck.Bounded(t, engine)
	assert.Contains(t, out["%v"], "tensor engine on sim:0")
}
