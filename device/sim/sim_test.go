package sim_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

func newDevice(t testing.TB, cfg sim.Config) *sim.Device {
	t.Helper()
	if cfg.Memory == 0 {
		cfg.Memory = 16 << 20
	}
	dev, err := sim.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	return dev
}

func TestNewAndInfo(t *testing.T) {
	dev := newDevice(t, sim.Config{Ordinal: 2, Memory: 1<<20 + 100})
	i := dev.Info()
	assert.Equal(t, "sim:2", i.Name)
	assert.Equal(t, devarray.DeviceID{Kind: devarray.Sim, Ordinal: 2}, i.ID)
	assert.Equal(t, "sim", i.Backend)
	assert.Equal(t, int64(1<<20), i.TotalMemory, "capacity rounds down to the alignment")
	assert.Equal(t, int64(256), i.Alignment)
	assert.True(t, i.CanMapHost)
	assert.Equal(t, "sim:2", dev.Ledger().Name())

	_, err := sim.New(sim.Config{Memory: 100})
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	_, err = sim.New(sim.Config{Ordinal: -1})
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	def, err := sim.New(sim.Config{})
	require.NoError(t, err)
	assert.Equal(t, int64(sim.DefaultMemory), def.Info().TotalMemory, "4 GiB by default")
	require.NoError(t, def.Close())
}

func TestOutOfMemory(t *testing.T) {
	dev := newDevice(t, sim.Config{Memory: 1 << 20})
	p, err := dev.Malloc(700 << 10)
	require.NoError(t, err)
	defer dev.Free(p)

	_, err = dev.Malloc(400 << 10)
	require.ErrorIs(t, err, accounting.ErrOutOfMemory)
	var oom *accounting.OutOfMemoryError
	require.True(t, errors.As(err, &oom))
	assert.False(t, oom.ByLimit, "the device itself is full")
	assert.Equal(t, int64(400<<10), oom.Requested)
	assert.Equal(t, int64(700<<10), oom.InUse)
	assert.Equal(t, int64(324<<10), oom.DeviceFree)
	assert.Equal(t, int64(1<<20), oom.DeviceTotal)

	_, err = dev.Malloc(2 << 20)
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory, "larger than the device")

	require.NoError(t, dev.Ledger().SetLimit(accounting.Device, 800<<10))
	_, err = dev.Malloc(200 << 10)
	require.True(t, errors.As(err, &oom))
	assert.True(t, oom.ByLimit, "the ledger's limit refused it")
	assert.Equal(t, int64(324<<10), oom.DeviceFree, "with the device's figures")
	assert.Equal(t, int64(3), dev.Ledger().Snapshot().Kinds[accounting.Device].Failed)
	assert.Equal(t, int64(700<<10), dev.Ledger().Current(accounting.Device), "failures leave nothing counted")
}

func TestHostFlagsString(t *testing.T) {
	assert.Equal(t, "none", driver.HostFlags(0).String())
	assert.Equal(t, "portable|mapped|write-combined", (driver.Portable | driver.Mapped | driver.WriteCombined).String())
	assert.Equal(t, "mapped|unknown", (driver.Mapped | 1<<9).String())
	assert.Equal(t, "unknown", driver.HostFlags(1<<9).String())
}

func TestFaultInjection(t *testing.T) {
	dev := newDevice(t, sim.Config{FailAlloc: 2})
	p, err := dev.Malloc(10)
	require.NoError(t, err, "the first allocation succeeds")
	_, err = dev.Malloc(10)
	assert.ErrorIs(t, err, driver.ErrInjected, "the second fails")
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory, "and looks like an out-of-memory error")
	q, err := dev.Malloc(10)
	require.NoError(t, err, "the third succeeds again")

	dev.FailCopy(3)
	buf := testdev.RandomBytes(10)
	require.NoError(t, dev.CopyHtoD(p, buf))
	require.NoError(t, dev.CopyHtoD(p, buf))
	assert.ErrorIs(t, dev.CopyHtoD(p, buf), driver.ErrInjected)
	require.NoError(t, dev.CopyHtoD(p, buf))

	dev.FailAlloc(1)
	_, err = dev.HostAlloc(100, 0)
	assert.ErrorIs(t, err, driver.ErrInjected)
	dev.FailCopy(1)
	dev.FailCopy(0)
	assert.NoError(t, dev.Memset(p, 1, 10), "0 cancels")

	require.NoError(t, dev.Free(p))
	require.NoError(t, dev.Free(q))
	s := dev.Ledger().Snapshot()
	assert.Zero(t, s.Kinds[accounting.Device].Current)
	assert.Zero(t, s.Kinds[accounting.Pinned].Current)
	assert.Equal(t, int64(1), s.Kinds[accounting.Device].Failed)
}

func TestClose(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(t, err)
	p, err := dev.Malloc(1000)
	require.NoError(t, err)
	h, err := dev.HostAlloc(100, driver.Mapped)
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.MemsetAsync(p, 7, 1000))

	require.NoError(t, dev.Close())
	require.NoError(t, dev.Close(), "closing twice is harmless")
	snap := dev.Ledger().Snapshot()
	assert.Zero(t, snap.Kinds[accounting.Device].Current, "Close frees what was left, and counts it")
	assert.Zero(t, snap.Kinds[accounting.Mapped].Current)
	assert.Equal(t, int64(1), snap.Memsets.Count, "queued work ran before Close returned")

	_, err = dev.Malloc(10)
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, dev.Free(p), driver.ErrClosed)
	assert.ErrorIs(t, dev.CopyDtoH(make([]byte, 10), p), driver.ErrClosed)
	_, _, err = dev.MemInfo()
	assert.ErrorIs(t, err, driver.ErrClosed)
	_, err = dev.HostAlloc(10, 0)
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, dev.HostFree(h), driver.ErrClosed)
	_, err = dev.NewStream()
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, s.MemsetAsync(p, 1, 1), driver.ErrClosed)
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "a refused allocation leaves nothing counted")
}

func TestNoMapHost(t *testing.T) {
	noMap := newDevice(t, sim.Config{NoMapHost: true})
	assert.False(t, noMap.Info().CanMapHost)
	assert.Equal(t, "sched_auto", noMap.Info().ContextFlags)
	_, err := noMap.HostAlloc(4096, driver.Mapped)
	assert.ErrorIs(t, err, driver.ErrNotMapped, "no silent fallback to unmapped memory")
	assert.Contains(t, err.Error(), "CU_CTX_MAP_HOST")
	h, err := noMap.HostAlloc(4096, driver.Portable)
	require.NoError(t, err, "unmapped memory still works")
	require.NoError(t, noMap.HostFree(h))
}

func TestAccess(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	p, err := dev.Malloc(1024)
	require.NoError(t, err)
	data := testdev.RandomBytes(1024)
	require.NoError(t, dev.CopyHtoD(p, data))
	err = dev.Access([]driver.Range{{Ptr: p + 10, N: 100}, {Ptr: p, N: 1024}}, func(mem [][]byte) error {
		assert.Equal(t, data[10:110], mem[0])
		mem[1][0] ^= 0xff // writes land in device memory
		return nil
	})
	require.NoError(t, err)
	got := make([]byte, 1)
	require.NoError(t, dev.CopyDtoH(got, p))
	assert.Equal(t, data[0]^0xff, got[0])

	called := false
	err = dev.Access([]driver.Range{{Ptr: p, N: 1025}}, func([][]byte) error { called = true; return nil })
	assert.ErrorIs(t, err, driver.ErrInvalidPointer, "one byte past the allocation")
	assert.False(t, called)
	require.NoError(t, dev.Free(p))
	err = dev.Access([]driver.Range{{Ptr: p, N: 1}}, func([][]byte) error { called = true; return nil })
	assert.ErrorIs(t, err, driver.ErrInvalidPointer, "freed memory")
	assert.False(t, called)
}
