package device_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Oversubscription: on a device with concurrent managed access, managed
// memory may be larger than the device's free memory, and pages moving to
// the device evict others to the host (sim/managed_evict.go). The tests
// leave the device 8 MiB free by holding the rest in device memory.

// deviceFreeLeft allocates device memory until only left bytes of the
// device are free, freed when the test ends, and returns the free bytes.
func deviceFreeLeft(t *testing.T, dev device.Device, left int64) int64 {
	t.Helper()
	free, _, err := dev.MemInfo()
	require.NoError(t, err)
	require.Greater(t, free, left, "the device has more than %d bytes free", left)
	p, err := dev.Malloc(free - left)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Free(p)) })
	free, _, err = dev.MemInfo()
	require.NoError(t, err)
	return free
}

// A managed array twice the device's free memory, written chunk by chunk
// by HtoD copies (each chunk's pages move to the device), completes: the
// pages beyond the device's memory evict the least recently moved ones,
// each a page of DtoH on "migrated", one eviction each; the host then
// reads back every byte it gave, and the ledger's managed bytes return to
// 0 after the free.
func TestManagedOversubscriptionEvicts(t *testing.T) {
	dev := testdev.Open(t)
	requireResidency(t, dev)
	r := rand.For(t)
	const deviceLeft = 8 << 20
	free := deviceFreeLeft(t, dev, deviceLeft)
	size := 2 * free / managedPage * managedPage
	chunk := int64(1+r.IntN(4)) << 19
	a, err := devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Uint8, int(size))
	require.NoError(t, err, "%d bytes of managed memory on a device with %d free", size, free)
	p := a.Ptr()
	want := testdev.RandomBytes(int(size))

	before := dev.Ledger().Snapshot()
	for off := int64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		require.NoError(t, dev.CopyHtoD(p+devarray.Ptr(off), want[off:off+n]))
	}
	run := accounting.Diff(before, dev.Ledger().Snapshot())
	pages, roomPages := size/managedPage, free/managedPage
	assert.Equal(t, pages-roomPages, run.Managed.Evictions, "every page beyond the device's %d free pages evicts one", roomPages)
	assert.Equal(t, run.Managed.Evictions*managedPage, run.Copies[accounting.DtoH][accounting.PathMigrated].Bytes, "an eviction writes one page back")
	assert.Equal(t, pages, run.Managed.Faults, "each page populated on the device by a fault")

	got, err := a.HostView(false)
	require.NoError(t, err)
	require.Equal(t, want, got, "the host reads back every byte")
	require.NoError(t, a.Free())
	assert.Zero(t, dev.Ledger().Current(accounting.Managed), "managed bytes after the free")
}

// A device without concurrent managed access cannot oversubscribe:
// managed memory lives in its memory, and more than its memory is out of
// memory, as on GPUs before Pascal.
func TestManagedExclusiveDoesNotOversubscribe(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	_, total, err := dev.MemInfo()
	require.NoError(t, err)
	_, err = dev.MallocManaged(total+managedPage, devarray.AttachGlobal)
	require.ErrorIs(t, err, accounting.ErrOutOfMemory)
}

// On a device with concurrent managed access one managed allocation may
// be larger than the whole device, not only its free memory; its pages
// written a few at a time by the host and read back fault on the device
// and evict, and the free gives every managed byte back.
func TestManagedLargerThanTheDevice(t *testing.T) {
	dev := testdev.Open(t)
	requireResidency(t, dev)
	if !dev.ConcurrentManagedAccess() {
		t.Skip("the device has no concurrent managed access: its managed memory is device memory")
	}
	_, total, err := dev.MemInfo()
	require.NoError(t, err)
	if total > 4<<30 {
		t.Skipf("a device of %d bytes: twice it keeps more page records than a unit test should (make cuda-emu-test runs this test on a 256 MiB emulated device)", total)
	}
	size := 2 * total
	p, err := dev.MallocManaged(size, devarray.AttachGlobal)
	require.NoError(t, err, "%d bytes of managed memory on a device of %d", size, total)
	assert.Equal(t, size, dev.Ledger().Current(accounting.Managed))
	want := testdev.RandomBytes(managedPage)
	last := p + devarray.Ptr(size-managedPage)
	require.NoError(t, dev.CopyHtoD(last, want), "a page at the end of twice the device")
	got := make([]byte, managedPage)
	require.NoError(t, dev.CopyDtoH(got, last))
	assert.Equal(t, want, got)
	require.NoError(t, dev.Free(p))
	assert.Zero(t, dev.Ledger().Current(accounting.Managed), "managed bytes after the free")
}

// sim evicts the page that moved to the device least recently (a guess:
// the driver's order is not documented): with room for k pages, writing
// k+1 pages in turn evicts the first, so the host's read of it takes no
// fault and moves nothing, while its read of the second moves that page
// back. MemInfo counts the resident pages as used.
func TestManagedEvictsLeastRecentlyMoved(t *testing.T) {
	dev := testdev.Open(t)
	requireResidency(t, dev)
	r := rand.For(t)
	k := 2 + r.IntN(6)
	room := deviceFreeLeft(t, dev, int64(k)*managedPage)
	require.Equal(t, int64(k)*managedPage, room, "device memory is allocated by whole pages here")
	a, err := devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Uint8, (k+1)*managedPage)
	require.NoError(t, err)
	defer a.Free()
	want := testdev.RandomBytes((k + 1) * managedPage)
	for i := range k + 1 {
		off := i * managedPage
		require.NoError(t, dev.CopyHtoD(a.Ptr()+devarray.Ptr(off), want[off:off+managedPage]))
	}
	free, _, err := dev.MemInfo()
	require.NoError(t, err)
	assert.Zero(t, free, "the k resident pages fill the device")
	for _, tc := range []struct {
		page   int
		onHost bool
	}{{0, true}, {1, false}, {k, false}} {
		v, err := a.Slice(0, tc.page*managedPage, (tc.page+1)*managedPage)
		require.NoError(t, err)
		read := measureManaged(t, dev, func() {
			b, err := v.HostView(false)
			require.NoError(t, err)
			assert.Equal(t, want[tc.page*managedPage:(tc.page+1)*managedPage], b, "page %d", tc.page)
		})
		moved := managedDiff{migratedDtoH: managedPage, faults: 1}
		if tc.onHost {
			moved = managedDiff{}
		}
		assert.Equal(t, moved, read, "page %d evicted: %v", tc.page, tc.onHost)
	}
}
