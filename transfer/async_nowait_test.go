package transfer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// slowLatency is how late the device of TestCopyAsyncNeverWaits completes
// each stream operation: a call that waited for the device would take at
// least that long.
const slowLatency = 400 * time.Millisecond

// slowDevice returns a device whose stream work completes slowLatency
// after it is queued: its own sim device, or the test device when it is
// the emulated CUDA driver run with latency=400ms (make cuda-emu-test runs
// this test so). Elsewhere, a GPU included, the test skips.
func slowDevice(t *testing.T) device.Device {
	dev := testdev.Open(t)
	if testdev.IsSim(dev) {
		return openSim(t, fmt.Sprintf("sim:9?mem=64MiB&latency=%v", slowLatency))
	}
	if testdev.SimLatency(dev) < slowLatency {
		t.Skipf("needs a device whose work completes %v late: sim, or the emulated CUDA driver with latency=400ms (make cuda-emu-test)", slowLatency)
	}
	return dev
}

// CopyAsync never waits for the device, whatever the host memory: queued
// behind a slow operation on its stream, each call returns long before the
// device could have done it. A driver copy of pageable memory would wait
// (the H100 hung in one), so pageable memory goes through the staged ring,
// or, when the direct path is asked for, the copy runs on a goroutine of
// the copier's.
func TestCopyAsyncNeverWaits(t *testing.T) {
	dev := slowDevice(t)
	const n = 1 << 16
	c, err := transfer.New(dev, transfer.WithRegisterCache(1<<20))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	a, err := devarray.FromBytes(dev, testdev.RandomBytes(n), devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	buffer := func(flags pinned.Flags) *pinned.Buffer {
		b, err := pinned.Alloc(dev, n, flags)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, b.Free()) })
		copy(b.Bytes(), testdev.RandomBytes(n))
		return b
	}
	pageable, registered := testdev.RandomBytes(n), testdev.RandomBytes(n)
	locked, mapped, wc := buffer(0), buffer(pinned.Mapped), buffer(pinned.WriteCombined)
	hosts := []struct {
		name string
		host transfer.Endpoint
		via  []transfer.Option
	}{
		{"pageable", transfer.HostBytes(pageable, devarray.Uint8), nil},
		{"pageable, direct path", transfer.HostBytes(pageable, devarray.Uint8), []transfer.Option{transfer.Via(transfer.PathDirect)}},
		{"pageable, registered", transfer.HostBytes(registered, devarray.Uint8), []transfer.Option{transfer.Via(transfer.PathRegistered)}},
		{"page-locked", transfer.Pinned(locked, devarray.Uint8), nil},
		{"mapped", transfer.Pinned(mapped, devarray.Uint8), []transfer.Option{transfer.Via(transfer.PathMapped)}},
		{"write-combined", transfer.Pinned(wc, devarray.Uint8), nil},
	}
	// Warm up: the staging ring and the registration are made once.
	for _, h := range hosts {
		op, err := c.CopyAsync(s, transfer.Dev(a), h.host, h.via...)
		require.NoError(t, err, h.name)
		require.NoError(t, op.Wait(), h.name)
	}
	for _, h := range hosts {
		for _, toDevice := range []bool{true, false} {
			dst, src := h.host, transfer.Dev(a)
			if toDevice {
				dst, src = src, dst
			}
			t.Run(fmt.Sprintf("%s, to the device %v", h.name, toDevice), func(t *testing.T) {
				require.NoError(t, s.MemsetAsync(a.Ptr(), 0x5a, 1)) // completes slowLatency from now
				start := time.Now()
				op, err := c.CopyAsync(s, dst, src, h.via...)
				took := time.Since(start)
				require.NoError(t, err)
				t.Logf("CopyAsync returned after %v", took)
				assert.Less(t, took, slowLatency/2, "the call waited for the device's work (it takes %v)", slowLatency)
				require.NoError(t, op.Wait())
			})
		}
	}
	require.NoError(t, s.Synchronize())
}
