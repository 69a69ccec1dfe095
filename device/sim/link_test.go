package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// With a Link, a copy between host and device takes its bytes over the
// link's rate, pinned or pageable, one copy at a time in each direction,
// and still delivers the bytes; Info reports the link.
func TestLink(t *testing.T) {
	const n = 1 << 20
	link := &sim.Link{PinnedGBps: 0.1, PageableGBps: 0.05} // 1 MiB: 10.5 ms pinned, 21 ms pageable
	dev := newDevice(t, sim.Config{Memory: 8 << 20, Link: link})
	assert.Equal(t, 0.1e9, dev.Info().HostLinkBandwidth)
	p, err := dev.Malloc(2 * n)
	require.NoError(t, err)
	defer dev.Free(p)
	h, err := dev.HostAlloc(n, 0)
	require.NoError(t, err)
	defer dev.HostFree(h)
	src := testdev.RandomBytes(n)
	copy(h.Bytes, src)
	took := func(f func() error) time.Duration {
		start := time.Now()
		require.NoError(t, f())
		return time.Since(start)
	}
	pinnedTime := time.Duration(n / 0.1)
	assert.GreaterOrEqual(t, took(func() error { return dev.CopyHtoD(p, h.Bytes) }), pinnedTime, "pinned")
	pageable := make([]byte, n)
	assert.GreaterOrEqual(t, took(func() error { return dev.CopyDtoH(pageable, p) }), 2*pinnedTime, "pageable: half the rate")
	assert.Equal(t, src, pageable)
	// Two copies in one direction on two streams share the link.
	s1, err := dev.NewStream()
	require.NoError(t, err)
	defer s1.Close()
	s2, err := dev.NewStream()
	require.NoError(t, err)
	defer s2.Close()
	assert.GreaterOrEqual(t, took(func() error {
		require.NoError(t, s1.CopyHtoDAsync(p, h.Bytes))
		require.NoError(t, s2.CopyHtoDAsync(p+n, h.Bytes))
		require.NoError(t, s1.Synchronize())
		return s2.Synchronize()
	}), 2*pinnedTime, "one copy engine per direction")
	assert.Equal(t, src, peek(t, dev, p+n, n))

	for _, bad := range []*sim.Link{{PinnedGBps: -1}, {PageableGBps: math.NaN()}, {PinnedGBps: math.Inf(1)},
		{PinnedGBps: sim.MinLinkGBps / 2}, {PinnedGBps: 1, PageableGBps: 1e-300}} { // too slow: a copy sleeps for ever, or its time overflows
		_, err := sim.New(sim.Config{Memory: 1 << 20, Link: bad})
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "%+v", bad)
	}
}

// With a Link, the pages managed memory migrates take their bytes over
// it too: a prefetch to the device completes on its stream once they have
// crossed, and a host read of device-resident pages waits for them.
func TestLinkPacesMigrations(t *testing.T) {
	const n = 1 << 20
	link := &sim.Link{PinnedGBps: 0.1, PageableGBps: 0.05} // 1 MiB: 10.5 ms at the page-locked rate
	dev := newDevice(t, sim.Config{Memory: 8 << 20, Link: link})
	p, err := dev.MallocManaged(n, devarray.AttachGlobal)
	require.NoError(t, err)
	defer dev.Free(p)
	h, err := dev.HostAccess(p, n, true)
	require.NoError(t, err)
	src := testdev.RandomBytes(n)
	copy(h, src)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	took := func(f func() error) time.Duration {
		start := time.Now()
		require.NoError(t, f())
		return time.Since(start)
	}
	pinnedTime := time.Duration(n / 0.1)
	before := dev.Ledger().Snapshot()
	assert.GreaterOrEqual(t, took(func() error {
		if err := s.Prefetch(p, n, driver.Location(0)); err != nil {
			return err
		}
		return s.Synchronize()
	}), pinnedTime, "prefetch to the device")
	assert.GreaterOrEqual(t, took(func() error {
		if err := s.Prefetch(p, n, driver.HostLocation); err != nil {
			return err
		}
		return s.Synchronize()
	}), pinnedTime, "prefetch to the host")
	require.NoError(t, s.Prefetch(p, n, driver.Location(0)))
	require.NoError(t, s.Synchronize())
	var back []byte
	assert.GreaterOrEqual(t, took(func() (err error) {
		back, err = dev.HostAccess(p, n, false)
		return err
	}), pinnedTime, "a host read of device-resident pages migrates them")
	assert.Equal(t, src, back)
	d := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(2*n), d.Copies[accounting.HtoD][accounting.PathPrefetch].Bytes)
	assert.Equal(t, int64(n), d.Copies[accounting.DtoH][accounting.PathPrefetch].Bytes)
	assert.Equal(t, int64(n), d.Copies[accounting.DtoH][accounting.PathMigrated].Bytes)
}

// With a Link, page faults take their service time on it before their
// pages' bytes: a kernel's faults a DeviceFaultService for each
// FaultBatch of them, the host's a HostFaultService each; a prefetch
// faults nothing and pays neither. Device work that touches managed pages
// (here a memset, as a Go kernel's declared ranges and a 1-D copy do)
// returns once they have crossed.
func TestLinkServicesFaults(t *testing.T) {
	const pages = sim.FaultBatch + 1 // two batches of a kernel's faults
	const n = pages * sim.ManagedPageSize
	link := &sim.Link{PinnedGBps: 1000, PageableGBps: 1000, DeviceFaultService: 15 * time.Millisecond, HostFaultService: 100 * time.Microsecond}
	dev := newDevice(t, sim.Config{Memory: 8 << 20, Link: link})
	p, err := dev.MallocManaged(n, devarray.AttachGlobal)
	require.NoError(t, err)
	defer dev.Free(p)
	took := func(f func() error) time.Duration {
		start := time.Now()
		require.NoError(t, f())
		return time.Since(start)
	}
	faults := func() int64 { return dev.Ledger().Managed().Faults }
	hostFaults := time.Duration(pages) * link.HostFaultService

	src := testdev.RandomBytes(n)
	assert.GreaterOrEqual(t, took(func() error {
		h, err := dev.HostAccess(p, n, true)
		copy(h, src)
		return err
	}), hostFaults, "the host's first touch: a fault a page")
	assert.Equal(t, int64(pages), faults())

	assert.GreaterOrEqual(t, took(func() error { return dev.Memset(p, 0x5a, n) }), 2*link.DeviceFaultService,
		"a kernel's %d faults: two batches", pages)
	assert.Equal(t, int64(2*pages), faults())

	var back []byte
	assert.GreaterOrEqual(t, took(func() (err error) {
		back, err = dev.HostAccess(p, n, false)
		return err
	}), hostFaults, "a host read of device-resident pages: a fault a page")
	assert.Equal(t, int64(3*pages), faults())
	for i, b := range back {
		if b != 0x5a {
			t.Fatalf("byte %d is %#x after the memset, want 0x5a", i, b)
		}
	}

	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Prefetch(p, n, driver.Location(0)))
	require.NoError(t, s.Synchronize())
	assert.Equal(t, int64(3*pages), faults(), "a prefetch faults nothing")
	d := dev.Ledger().Snapshot()
	assert.Equal(t, int64(n), d.Copies[accounting.HtoD][accounting.PathPrefetch].Bytes)
	assert.Equal(t, int64(n), d.Copies[accounting.HtoD][accounting.PathMigrated].Bytes, "the memset's faults moved the pages once")

	_, err = sim.New(sim.Config{Memory: 1 << 20, Link: &sim.Link{PinnedGBps: 1, PageableGBps: 1, DeviceFaultService: -time.Nanosecond}})
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "a negative service time")
	_, err = sim.New(sim.Config{Memory: 1 << 20, Link: &sim.Link{PinnedGBps: 1, PageableGBps: 1, HostFaultService: sim.MaxFaultService + 1}})
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "a service time over a second")
}
