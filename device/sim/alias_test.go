package sim_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// TestRegisteredAndWriteCombinedMemoryHaveTheirOwnDeviceAddress: mapped
// registered and mapped write-combined memory get a device address other
// than their host address ("there exists a distinct host and device
// address"): device work through DevPtr reaches the bytes, and device
// work handed the host pointer is refused, naming DevPtr; plain mapped
// memory keeps its host address.
func TestRegisteredAndWriteCombinedMemoryHaveTheirOwnDeviceAddress(t *testing.T) {
	const n = 1 << 12
	for _, tc := range []struct {
		name     string
		make     func(d *sim.Device) (*driver.HostMem, func() error, error)
		distinct bool
	}{
		{"registered, mapped", func(d *sim.Device) (*driver.HostMem, func() error, error) {
			h, err := d.Register(make([]byte, n), driver.Mapped)
			return h, func() error { return d.Unregister(h) }, err
		}, true},
		{"write-combined, mapped", func(d *sim.Device) (*driver.HostMem, func() error, error) {
			h, err := d.HostAlloc(n, driver.Mapped|driver.WriteCombined)
			return h, func() error { return d.HostFree(h) }, err
		}, true},
		{"mapped", func(d *sim.Device) (*driver.HostMem, func() error, error) {
			h, err := d.HostAlloc(n, driver.Mapped)
			return h, func() error { return d.HostFree(h) }, err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDevice(t, sim.Config{Memory: 1 << 20})
			h, free, err := tc.make(d)
			require.NoError(t, err)
			host := devarray.Ptr(uintptr(unsafe.Pointer(unsafe.SliceData(h.Bytes))))
			assert.Equal(t, tc.distinct, h.DevPtr != host, "device address %v, host address %v", h.DevPtr, host)
			data := testdev.RandomBytes(n)
			copy(h.Bytes, data)
			dst, err := d.Malloc(n)
			require.NoError(t, err)
			defer d.Free(dst)
			require.NoError(t, d.CopyDtoD(dst, h.DevPtr, n), "through DevPtr")
			got := make([]byte, n)
			require.NoError(t, d.CopyDtoH(got, dst))
			assert.Equal(t, data, got)
			err = d.CopyDtoD(dst, host, n)
			if tc.distinct {
				require.ErrorIs(t, err, driver.ErrInvalidPointer, "the host pointer")
				assert.Contains(t, err.Error(), "use DevPtr")
			} else {
				require.NoError(t, err)
			}
			require.NoError(t, free())
			assert.Zero(t, h.DevPtr)
		})
	}
}

// TestStreamCheckerSeesThroughDeviceAddresses: a device read of
// registered memory through its own device address races with a copy into
// the same bytes on another stream, though the two name different
// addresses.
func TestStreamCheckerSeesThroughDeviceAddresses(t *testing.T) {
	const n = 1 << 12
	d := newDevice(t, sim.Config{Memory: 1 << 20, CheckStreams: true})
	reg := make([]byte, n)
	h, err := d.Register(reg, driver.Mapped)
	require.NoError(t, err)
	defer d.Unregister(h)
	src, err := d.Malloc(n)
	require.NoError(t, err)
	defer d.Free(src)
	dst, err := d.Malloc(n)
	require.NoError(t, err)
	defer d.Free(dst)
	a, err := d.NewStream()
	require.NoError(t, err)
	defer a.Close()
	b, err := d.NewStream()
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, a.CopyDtoHAsync(reg, src))
	err = b.CopyDtoDAsync(dst, h.DevPtr, n)
	require.True(t, errors.Is(err, driver.ErrStreamRace), "got %v", err)
	require.NoError(t, a.Synchronize())
}
