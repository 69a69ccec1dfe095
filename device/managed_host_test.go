package device_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// The host's access to managed memory (HostView), one rule per test, on
// sim devices of both kinds: managed=exclusive, a device without
// concurrent managed access (GPUs before Pascal, any GPU on Windows), and
// the default, with it (an H100 or H200 on Linux). Each test quotes the
// sentence it checks; sim/managed_host.go keeps the rules.

// openManagedSim opens a sim device with the given managed= option.
func openManagedSim(t *testing.T, mode string) *sim.Device {
	t.Helper()
	dev, err := device.Open("sim:0?mem=64MiB&managed=" + mode)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	return dev.(*sim.Device)
}

// managedArray is a managed array of 2 pages attached with attach.
func managedArray(t *testing.T, dev device.Device, attach devarray.Attach) *devarray.DevArray {
	t.Helper()
	a, err := devarray.EmptyManaged(dev, attach, devarray.Uint8, 2*managedPage)
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	return a
}

// queueUnrelatedWork queues a memset of device memory that is not the
// managed array on s.
func queueUnrelatedWork(t *testing.T, dev device.Device, s device.Stream) {
	t.Helper()
	p, err := dev.Malloc(4096)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Free(p) })
	require.NoError(t, s.MemsetAsync(p, 0x5a, 4096))
}

// "the GPU holds exclusive access to all managed memory while any kernel
// is in flight. Host access to managed memory—even allocations unrelated
// to the running kernel—is forbidden until the stream is synchronized."
// (NVIDIA's cuda-python tracker, on devices whose
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is zero)
func TestManagedHostAccessWhileDeviceActive(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	require.False(t, dev.ConcurrentManagedAccess())
	a := managedArray(t, dev, devarray.AttachGlobal)
	s := newStreams(t, dev, 1)[0]
	resume := testdev.Hold(t, s)
	queueUnrelatedWork(t, dev, s)
	_, err := a.HostView(false)
	assert.ErrorIs(t, err, driver.ErrManagedBusy, "work in flight on a stream: the device owns the array")
	resume()
	require.NoError(t, s.Synchronize())
	b, err := a.HostView(true)
	require.NoError(t, err, "once the stream is synchronized the host may touch it")
	assert.Len(t, b, 2*managedPage)
}

// "Unified Memory uses logical activity to determine whether the GPU is
// idle": explicit synchronization is required even when the kernel is
// done before the host touches the memory (Programming Guide, "Explicit
// Synchronization and Logical GPU Activity"). sim runs a kernel queued
// on an idle default stream at once, before the launch returns: the
// device is still active until the host synchronizes.
func TestManagedHostAccessNeedsSynchronization(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	a := managedArray(t, dev, devarray.AttachGlobal)
	ran := false
	require.NoError(t, dev.Launch(nil, nil, func([][]byte) error { ran = true; return nil }))
	require.True(t, ran, "the kernel is done")
	_, err := a.HostView(false)
	assert.ErrorIs(t, err, driver.ErrManagedBusy, "done is not synchronized")
	require.NoError(t, dev.Synchronize())
	_, err = a.HostView(false)
	assert.NoError(t, err)
}

// An event recorded after the work, seen complete by the host, is a
// synchronization too: the guide's "Explicit Synchronization and Logical
// GPU Activity" counts cudaEventSynchronize, and cudaEventQuery returning
// success, among the calls after which the host may touch managed memory.
func TestManagedHostAccessAfterEvent(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	a := managedArray(t, dev, devarray.AttachGlobal)
	s := newStreams(t, dev, 1)[0]
	for _, wait := range []string{"synchronize", "query"} {
		t.Run(wait, func(t *testing.T) {
			ev, err := dev.NewEvent()
			require.NoError(t, err)
			defer ev.Close()
			queueUnrelatedWork(t, dev, s)
			require.NoError(t, s.Record(ev))
			_, err = a.HostView(false)
			require.ErrorIs(t, err, driver.ErrManagedBusy, "before the host sees the event")
			if wait == "synchronize" {
				require.NoError(t, ev.Synchronize())
			} else {
				require.Eventually(t, func() bool { done, err := ev.Query(); return err == nil && done }, testdev.PeekDeadline, time.Millisecond)
			}
			_, err = a.HostView(false)
			require.NoError(t, err, "the host saw the event complete: the stream's work before it is synchronized")
			queueUnrelatedWork(t, dev, s)
			_, err = a.HostView(false)
			assert.ErrorIs(t, err, driver.ErrManagedBusy, "work queued after the event is not")
			require.NoError(t, s.Synchronize())
		})
	}
}

// "When memory is associated with a single stream, the Unified Memory
// system will allow CPU access to this memory region so long as all
// operations in hStream have completed, regardless of whether other
// streams are active." (cuStreamAttachMemAsync)
func TestManagedHostAccessSingleStream(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	a := managedArray(t, dev, devarray.AttachGlobal)
	ss := newStreams(t, dev, 2)
	owner, other := ss[0], ss[1]
	require.NoError(t, owner.AttachMem(a.Ptr(), 0, devarray.AttachSingle))
	require.NoError(t, owner.Synchronize())
	resume := testdev.Hold(t, other)
	queueUnrelatedWork(t, dev, other)
	_, err := a.HostView(true)
	assert.NoError(t, err, "another stream's work does not own memory attached to this one")
	resume()
	queueUnrelatedWork(t, dev, owner)
	_, err = a.HostView(false)
	assert.ErrorIs(t, err, driver.ErrManagedBusy, "its own stream's work does")
	require.NoError(t, owner.Synchronize())
	require.NoError(t, other.Synchronize())
	_, err = a.HostView(false)
	assert.NoError(t, err)
}

// CU_MEM_ATTACH_HOST: "the program makes a guarantee that it won't access
// the memory on the device from any stream on a device that has a zero
// value for the device attribute
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS" (cuStreamAttachMemAsync):
// the host may touch it while the device works.
func TestManagedHostAccessAttachedToHost(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	a := managedArray(t, dev, devarray.AttachHost)
	s := newStreams(t, dev, 1)[0]
	resume := testdev.Hold(t, s)
	defer resume()
	queueUnrelatedWork(t, dev, s)
	_, err := a.HostView(true)
	assert.NoError(t, err)
}

// "Destroying the stream does not restore safe host access. Only
// synchronizing the stream before destruction does." (NVIDIA's
// cuda-python tracker): a stream closed with work the host never
// synchronized keeps the device active until the device is synchronized.
func TestManagedHostAccessAfterUnsynchronizedClose(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	a := managedArray(t, dev, devarray.AttachGlobal)
	s, err := dev.NewStream()
	require.NoError(t, err)
	queueUnrelatedWork(t, dev, s)
	require.NoError(t, s.Close())
	_, err = a.HostView(false)
	assert.ErrorIs(t, err, driver.ErrManagedBusy)
	require.NoError(t, dev.Synchronize())
	_, err = a.HostView(false)
	assert.NoError(t, err)
}

// On a device with concurrent managed access "Memory accesses to this
// range are always coherent and are allowed even when the data is
// actively being migrated" (cuMemPrefetchAsync): the host may touch
// managed memory while the device works.
func TestManagedHostAccessConcurrent(t *testing.T) {
	dev := openManagedSim(t, "concurrent")
	require.True(t, dev.ConcurrentManagedAccess())
	a := managedArray(t, dev, devarray.AttachGlobal)
	s := newStreams(t, dev, 1)[0]
	resume := testdev.Hold(t, s)
	defer resume()
	queueUnrelatedWork(t, dev, s)
	_, err := a.HostView(true)
	assert.NoError(t, err)
}

// "If dstDevice is a GPU, then the device attribute
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS must be non-zero"
// (cuMemPrefetchAsync); a prefetch to the host is allowed.
func TestManagedPrefetchNeedsConcurrentAccess(t *testing.T) {
	dev := openManagedSim(t, "exclusive")
	a := managedArray(t, dev, devarray.AttachGlobal)
	s := newStreams(t, dev, 1)[0]
	assert.ErrorIs(t, s.Prefetch(a.Ptr(), 2*managedPage, 0), driver.ErrInvalidValue)
	assert.NoError(t, s.Prefetch(a.Ptr(), 2*managedPage, driver.HostLocation))
	assert.ErrorIs(t, dev.Advise(a.Ptr(), 2*managedPage, driver.AdvisePreferredLocation, 0), driver.ErrInvalidValue)
	require.NoError(t, s.Synchronize())
}

// HostView refuses memory the host cannot touch in place, and writes
// through a read-only view.
func TestManagedHostViewRefused(t *testing.T) {
	dev := testdev.Open(t)
	d, err := devarray.Empty(dev, devarray.Uint8, 64)
	require.NoError(t, err)
	defer d.Free()
	_, err = d.HostView(false)
	assert.ErrorIs(t, err, devarray.ErrNotManaged)
	a := managedArray(t, dev, devarray.AttachGlobal)
	ro, err := a.AsReadOnly()
	require.NoError(t, err)
	_, err = ro.HostView(true)
	assert.ErrorIs(t, err, devarray.ErrReadOnly)
	require.NoError(t, a.Free())
	_, err = a.HostView(false)
	assert.ErrorIs(t, err, devarray.ErrFreed)
}
