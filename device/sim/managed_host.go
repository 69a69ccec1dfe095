package sim

import (
	"time"

	"fmt"
	"sync/atomic"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// The host's access to managed memory. On a device with concurrent
// managed access the host may touch it at any time: "Memory accesses to
// this range are always coherent" (cuMemPrefetchAsync). On one without,
// the GPU owns all managed memory while it is active, and a host access
// then is an error (on a GPU, a segmentation fault), by these rules:
//
//   - An allocation attached globally may be touched only while no stream
//     of the device is active: "On platforms where attribute
//     CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is zero, the GPU holds
//     exclusive access to all managed memory while any kernel is in
//     flight. Host access to managed memory—even allocations unrelated to
//     the running kernel—is forbidden until the stream is synchronized."
//     (NVIDIA's cuda-python tracker, "Add safeguards for unsynchronized
//     stream destruction", which the Programming Guide's "GPU Exclusive
//     Access To Managed Memory" states for any GPU activity). sim counts
//     any queued work (copies too) as activity, the strict reading.
//   - Activity is logical: a stream is active from the work queued on it
//     until the host synchronizes with it (its Synchronize, the device's,
//     an event recorded after the work that Synchronize or Query sees
//     complete), not until the work is done, as the Programming Guide's
//     "Explicit Synchronization and Logical GPU Activity" says. A stream
//     closed with work the host never synchronized with keeps the device
//     active until the device is synchronized: "Destroying the stream does
//     not restore safe host access. Only synchronizing the stream before
//     destruction does." (the same tracker).
//   - An allocation attached singly to a stream may be touched while that
//     stream is idle: "When memory is associated with a single stream, the
//     Unified Memory system will allow CPU access to this memory region so
//     long as all operations in hStream have completed, regardless of
//     whether other streams are active." (cuStreamAttachMemAsync)
//   - An allocation attached to the host may be touched at any time: with
//     CU_MEM_ATTACH_HOST "the program makes a guarantee that it won't
//     access the memory on the device from any stream on a device that has
//     a zero value for the device attribute
//     CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS" (cuStreamAttachMemAsync).
//
// A host access moves the pages it touches to the host, a page fault each
// where they were elsewhere, recorded as a DtoH copy on
// accounting.PathMigrated; a read of a read-mostly page resident on the
// device makes a host copy and leaves the device's.

// logicalActivity counts a stream's queued work and the part of it the
// host has synchronized with.
type logicalActivity struct {
	queuedOps, syncedOps atomic.Uint64
}

func (l *logicalActivity) queued() { l.queuedOps.Add(1) }

// mark is the count of work queued so far, for synchronized.
func (l *logicalActivity) mark() uint64 { return l.queuedOps.Load() }

// synchronized records that the host has waited for the first upTo
// operations.
func (l *logicalActivity) synchronized(upTo uint64) {
	for {
		old := l.syncedOps.Load()
		if old >= upTo || l.syncedOps.CompareAndSwap(old, upTo) {
			return
		}
	}
}

// active reports whether work was queued that the host has not
// synchronized with.
func (l *logicalActivity) active() bool { return l.syncedOps.Load() < l.queuedOps.Load() }

// closedUnsynchronized notes a stream closed with work the host never
// synchronized with.
func (d *Device) closedUnsynchronized(s *stream) {
	if s.logical.active() {
		d.managed.orphaned.Store(true)
	}
}

// activeStream returns a stream of the device that is logically active
// (the legacy default stream included), or nil.
func (d *Device) activeStream() *stream {
	for _, s := range d.streamList() {
		if s.logical.active() {
			return s
		}
	}
	return nil
}

// HostAccess returns the managed bytes [p, p+n) for the host to read in
// place (and write, when write), after moving the pages they lie in to
// the host. Where the device has no concurrent managed access and its
// work may use the memory now, by the rules above, it is an error
// wrapping driver.ErrManagedBusy, and nothing moves. The check holds at
// the call: queue no device work that uses the memory while the host
// still touches it.
func (d *Device) HostAccess(p devarray.Ptr, n int64, write bool) ([]byte, error) {
	op := fmt.Sprintf("host access to managed [%v, +%d)", p, n)
	if d.Closed() {
		return nil, fmt.Errorf("sim: %s: %w", op, driver.ErrClosed)
	}
	if err := d.checkFault(op); err != nil {
		return nil, err
	}
	m := &d.managed
	m.mu.Lock()
	a, first, end, err := m.managedRange(p, n)
	var attach devarray.Attach
	var on *stream
	if err == nil {
		attach, on = a.attch, a.on
	}
	m.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("sim: %s: %w", op, err)
	}
	if !d.ConcurrentManagedAccess() {
		if err := d.hostMayTouch(attach, on); err != nil {
			return nil, fmt.Errorf("sim: %s: %w", op, err)
		}
	}
	d.mu.RLock()
	b, err := d.devMem(p, n)
	var migrated time.Time
	if err == nil {
		migrated = d.cross(d.migrate(a, first, end, onHost, write, false))
	}
	d.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("sim: %s: %w", op, err)
	}
	waitUntil(migrated) // the host reads once the pages have crossed
	return b, nil
}

// hostMayTouch applies the rules above to an allocation attached with
// attach (to stream on, when single) on a device without concurrent
// managed access.
func (d *Device) hostMayTouch(attach devarray.Attach, on *stream) error {
	switch {
	case attach == devarray.AttachHost:
		return nil
	case attach == devarray.AttachSingle && on != nil:
		if on.logical.active() {
			return fmt.Errorf("it is attached to stream %#x, whose work the host has not synchronized with: %w", on.handle, driver.ErrManagedBusy)
		}
		return nil
	case d.managed.orphaned.Load():
		return fmt.Errorf("a stream was closed with work the host never synchronized with (synchronize the device): %w", driver.ErrManagedBusy)
	}
	if s := d.activeStream(); s != nil {
		return fmt.Errorf("stream %#x has work the host has not synchronized with, and the device owns all managed memory attached globally while it is active: %w", s.handle, driver.ErrManagedBusy)
	}
	return nil
}

// hostSynchronized records that the host saw recording m complete: it has
// synchronized with its stream's work up to it.
func (m *mark) hostSynchronized() {
	if m.s != nil {
		m.s.logical.synchronized(m.logical)
	}
}
