package device_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Managed memory's calls, on the test device: sim, or the cuda backend on
// the emulated CUDA driver (-tags cuda,cudaemu), whose managed memory is
// sim's. Each test quotes the Driver API sentence it checks.

// devLocation is the device's own location.
func devLocation(dev device.Device) driver.Location { return driver.Location(dev.DeviceID().Ordinal) }

// mallocManaged allocates n bytes of managed memory freed at the end of the test.
func mallocManaged(t *testing.T, dev device.Device, n int64, attach devarray.Attach) devarray.Ptr {
	t.Helper()
	p, err := dev.MallocManaged(n, attach)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Free(p) })
	return p
}

// "Allocates bytesize bytes of managed memory on the device [...] flags
// must be one of CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST" (cuMemAllocManaged):
// the memory holds what is copied in, and the ledger counts it as managed
// until it is freed.
func TestManagedAllocate(t *testing.T) {
	r := rand.For(t)
	for _, attach := range []devarray.Attach{devarray.AttachGlobal, devarray.AttachHost} {
		t.Run(attach.String(), func(t *testing.T) {
			dev := testdev.Open(t)
			n := 1 + r.Int64N(64<<10)
			before := dev.Ledger().Snapshot()
			p, err := dev.MallocManaged(n, attach)
			require.NoError(t, err)
			want := testdev.RandomBytes(int(n))
			require.NoError(t, dev.CopyHtoD(p, want))
			got := make([]byte, n)
			require.NoError(t, dev.CopyDtoH(got, p))
			assert.Equal(t, want, got, "managed memory holds what was copied in")
			k := accounting.Diff(before, dev.Ledger().Snapshot()).Kinds[accounting.Managed]
			assert.Equal(t, int64(1), k.Allocs, "one managed allocation")
			assert.Equal(t, (n+255)/256*256, k.Current, "the bytes asked for, rounded up to 256")
			assert.Zero(t, accounting.Diff(before, dev.Ledger().Snapshot()).Kinds[accounting.Device].Allocs, "no device allocation")
			require.NoError(t, dev.Free(p))
			assert.Zero(t, dev.Ledger().Current(accounting.Managed), "Free gives it back")
		})
	}
}

// "If bytesize is 0, cuMemAllocManaged returns CUDA_ERROR_INVALID_VALUE";
// "flags must be one of CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST".
func TestManagedAllocateRefused(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		name   string
		n      int64
		attach devarray.Attach
	}{
		{"0 bytes", 0, devarray.AttachGlobal},
		{"single", 4096, devarray.AttachSingle},
		{"no flag", 4096, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dev.MallocManaged(tc.n, tc.attach)
			assert.ErrorIs(t, err, device.ErrInvalidValue)
			assert.Zero(t, dev.Ledger().Current(accounting.Managed))
		})
	}
}

// cuMemAdvise's advice read back by cuMemRangeGetAttributes: read-mostly
// "1 if all pages in the given memory range have read-duplication
// enabled"; the preferred location "CU_DEVICE_INVALID if either all the
// pages don't have the same preferred location or some of the pages don't
// have a preferred location at all"; accessed-by "a list of device ids
// that had CU_MEM_ADVISE_SET_ACCESSED_BY set for that entire memory
// range".
func TestManagedAdviceReadBack(t *testing.T) {
	const pages = 8
	const page = 4096
	type advice struct {
		first, n int // pages
		a        driver.Advice
		host     bool // for the host, else for the device
	}
	dev := testdev.Open(t)
	me := devLocation(dev)
	for _, tc := range []struct {
		name   string
		advise []advice
		whole  driver.RangeAttributes // of all the pages
		front  driver.RangeAttributes // of the first half
	}{
		{"none", nil,
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation}},
		{"read-mostly on the front half", []advice{{0, pages / 2, driver.AdviseReadMostly, false}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation},
			driver.RangeAttributes{ReadMostly: true, PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation}},
		{"read-mostly set and unset", []advice{{0, pages, driver.AdviseReadMostly, false}, {pages / 2, pages / 2, driver.AdviseUnsetReadMostly, false}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation},
			driver.RangeAttributes{ReadMostly: true, PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation}},
		{"preferred: the device", []advice{{0, pages, driver.AdvisePreferredLocation, false}},
			driver.RangeAttributes{PreferredLocation: me, LastPrefetchLocation: driver.NoLocation},
			driver.RangeAttributes{PreferredLocation: me, LastPrefetchLocation: driver.NoLocation}},
		{"preferred: the host, then the device on the back half", []advice{{0, pages, driver.AdvisePreferredLocation, true}, {pages / 2, pages / 2, driver.AdvisePreferredLocation, false}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation},
			driver.RangeAttributes{PreferredLocation: driver.HostLocation, LastPrefetchLocation: driver.NoLocation}},
		{"preferred set and unset", []advice{{0, pages, driver.AdvisePreferredLocation, false}, {0, pages, driver.AdviseUnsetPreferredLocation, false}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation}},
		{"accessed by both, the device on the front half only", []advice{{0, pages, driver.AdviseAccessedBy, true}, {0, pages / 2, driver.AdviseAccessedBy, false}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation, AccessedBy: []driver.Location{driver.HostLocation}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation, AccessedBy: []driver.Location{driver.HostLocation, me}}},
		{"accessed by set and unset", []advice{{0, pages, driver.AdviseAccessedBy, false}, {0, pages, driver.AdviseAccessedBy, true}, {0, 1, driver.AdviseUnsetAccessedBy, false}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation, AccessedBy: []driver.Location{driver.HostLocation}},
			driver.RangeAttributes{PreferredLocation: driver.NoLocation, LastPrefetchLocation: driver.NoLocation, AccessedBy: []driver.Location{driver.HostLocation}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mallocManaged(t, dev, pages*page, devarray.AttachGlobal)
			for _, a := range tc.advise {
				loc := me
				if a.host {
					loc = driver.HostLocation
				}
				require.NoError(t, dev.Advise(p+devarray.Ptr(a.first*page), int64(a.n*page), a.a, loc), "advise %v", a.a)
			}
			whole, err := dev.RangeAttributes(p, pages*page)
			require.NoError(t, err)
			assert.Equal(t, tc.whole, whole, "the whole range")
			front, err := dev.RangeAttributes(p, pages/2*page)
			require.NoError(t, err)
			assert.Equal(t, tc.front, front, "the front half")
		})
	}
}

// "The memory range must refer to managed memory allocated via
// cuMemAllocManaged" (cuMemAdvise, cuMemPrefetchAsync,
// cuMemRangeGetAttribute): device memory is refused.
func TestManagedCallsRefuseDeviceMemory(t *testing.T) {
	dev := testdev.Open(t)
	p, err := dev.Malloc(4096)
	require.NoError(t, err)
	defer dev.Free(p)
	s := newStreams(t, dev, 1)[0]
	assert.ErrorIs(t, dev.Advise(p, 4096, driver.AdviseReadMostly, driver.HostLocation), device.ErrInvalidValue, "advise")
	_, err = dev.RangeAttributes(p, 4096)
	assert.ErrorIs(t, err, device.ErrInvalidValue, "range attributes")
	assert.Error(t, s.Prefetch(p, 4096, driver.HostLocation), "prefetch")
}

// "Passing in CU_DEVICE_CPU for dstDevice will prefetch the data to host
// memory" (cuMemPrefetchAsync), and the last prefetch location reads back
// "the last location to which all pages in the memory range were
// prefetched explicitly via cuMemPrefetchAsync" (cuMemRangeGetAttribute).
// The data stays what it was: "Memory accesses to this range are always
// coherent".
func TestManagedPrefetchKeepsData(t *testing.T) {
	const n = 16 << 10
	dev := testdev.Open(t)
	if !dev.ConcurrentManagedAccess() {
		t.Skipf("%s: no concurrent managed access: a prefetch to the device is refused", dev.Info().Name)
	}
	s := newStreams(t, dev, 1)[0]
	p := mallocManaged(t, dev, n, devarray.AttachGlobal)
	want := testdev.RandomBytes(n)
	require.NoError(t, dev.CopyHtoD(p, want))
	for _, loc := range []driver.Location{driver.HostLocation, devLocation(dev), driver.HostLocation} {
		require.NoError(t, s.Prefetch(p, n, loc))
		ra, err := dev.RangeAttributes(p, n)
		require.NoError(t, err)
		assert.Equal(t, loc, ra.LastPrefetchLocation, "the last prefetch location is set when the prefetch is asked for")
		require.NoError(t, s.Synchronize())
		got := make([]byte, n)
		require.NoError(t, s.CopyDtoHAsync(got, p))
		require.NoError(t, s.Synchronize())
		assert.Equal(t, want, got, "a prefetch to %v moves no byte of the data", loc)
	}
	ra, err := dev.RangeAttributes(p, n/2)
	require.NoError(t, err)
	assert.Equal(t, driver.HostLocation, ra.LastPrefetchLocation)
}

// cuStreamAttachMemAsync: "For managed allocations, length must be either
// zero or the entire allocation's size"; "It is illegal to attach singly
// to the NULL stream [...] An error will be returned in this case." An
// attachment to a stream is accepted with length 0 and with the size asked
// for; the size rounded up to the allocation unit is refused (sim's strict
// guess, logged by a conformance row).
func TestManagedAttach(t *testing.T) {
	const n = 8<<10 + 1000
	dev := testdev.Open(t)
	s := newStreams(t, dev, 1)[0]
	p := mallocManaged(t, dev, n, devarray.AttachHost)
	legacy, err := dev.ExternalStream(driver.LegacyDefaultStream)
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		s      device.Stream
		n      int64
		attach devarray.Attach
		ok     bool
	}{
		{"single, length 0", s, 0, devarray.AttachSingle, true},
		{"global, the whole size", s, n, devarray.AttachGlobal, true},
		{"host", s, 0, devarray.AttachHost, true},
		{"part of it", s, n / 2, devarray.AttachSingle, false},
		{"the size rounded up to 256 bytes", s, (n + 255) &^ 255, devarray.AttachGlobal, false},
		{"the size rounded up to a page", s, (n + 4095) &^ 4095, devarray.AttachGlobal, false},
		{"a byte more than the size", s, n + 1, devarray.AttachGlobal, false},
		{"single on the legacy stream", legacy, 0, devarray.AttachSingle, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.AttachMem(p, tc.n, tc.attach)
			if tc.ok {
				require.NoError(t, err)
				require.NoError(t, tc.s.Synchronize())
				return
			}
			if err == nil { // the driver may report it when the stream runs
				err = tc.s.Synchronize()
			}
			assert.ErrorIs(t, err, device.ErrInvalidValue)
		})
	}
}

// Managed memory's calls on a device closed under them (its stream still
// open) say the device was closed, as its other calls do, not that the
// memory Close freed was never managed.
func TestManagedCallsOnClosedDevice(t *testing.T) {
	dev, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	p, err := dev.MallocManaged(int64(1+rand.IntN(8<<10)), devarray.AttachGlobal)
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Prefetch to the device", func() error { return s.Prefetch(p, 1, devLocation(dev)) }},
		{"Prefetch to the host", func() error { return s.Prefetch(p, 1, driver.HostLocation) }},
		{"AttachMem", func() error { return s.AttachMem(p, 0, devarray.AttachGlobal) }},
		{"Advise", func() error { return dev.Advise(p, 1, device.AdviseReadMostly, devLocation(dev)) }},
		{"RangeAttributes", func() error { _, err := dev.RangeAttributes(p, 1); return err }},
		{"MallocManaged", func() error { _, err := dev.MallocManaged(1, devarray.AttachGlobal); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, tc.call(), device.ErrClosed)
		})
	}
	assert.Zero(t, dev.Ledger().Current(accounting.Managed))
}
