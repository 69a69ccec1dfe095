//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// kindOf returns the ledger kind of the live allocation at p: managed or
// device memory. The caller holds d.mu.
func (d *Device) kindOf(p devarray.Ptr) accounting.Kind { return kindIn(d.managed, p) }

// kindIn is kindOf with the managed allocations given.
func kindIn(managed map[devarray.Ptr]int64, p devarray.Ptr) accounting.Kind {
	if _, ok := managed[p]; ok {
		return accounting.Managed
	}
	return accounting.Device
}

// putBack lists an allocation as live, a new one or one whose free
// failed, a managed one with the bytes it was asked for. The caller holds
// d.mu.
func (d *Device) putBack(p devarray.Ptr, size, asked int64, kind accounting.Kind) {
	d.allocs[p] = size
	if kind == accounting.Managed {
		d.managed[p] = asked
	}
}

// MallocManaged allocates nbytes of managed memory attached with attach
// (cuMemAllocManaged: "flags must be one of CU_MEM_ATTACH_GLOBAL or
// CU_MEM_ATTACH_HOST"; "If bytesize is 0, cuMemAllocManaged returns
// CUDA_ERROR_INVALID_VALUE"), counted under accounting.Managed, rounded up
// to 256 as Malloc's. Free frees it.
func (d *Device) MallocManaged(nbytes int64, attach devarray.Attach) (devarray.Ptr, error) {
	if nbytes <= 0 || (attach != devarray.AttachGlobal && attach != devarray.AttachHost) {
		return 0, fmt.Errorf("cuda: malloc managed %d bytes attached %v: %w", nbytes, attach, driver.ErrInvalidValue)
	}
	return d.malloc("malloc managed", nbytes, accounting.Managed, func(size int64) (uintptr, error) {
		reportManaged(d.ledger)
		p, c := memAllocManaged(size, uint32(attach))
		return p, check(c)
	})
}

// ConcurrentManagedAccess reports the device's
// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS; false when it cannot be read.
func (d *Device) ConcurrentManagedAccess() bool {
	var v int
	err := d.call(func() error {
		var c int
		v, c = deviceGetAttribute(attrConcurrentManaged, d.ordinal)
		return check(c)
	})
	return err == nil && v != 0
}

// Advise gives advice a for the managed bytes [p, p+n) and location loc
// (cuMemAdvise).
func (d *Device) Advise(p devarray.Ptr, n int64, a driver.Advice, loc driver.Location) error {
	if a < driver.AdviseReadMostly || a > driver.AdviseUnsetAccessedBy || n <= 0 {
		return fmt.Errorf("cuda: advise %v [%v, +%d): %w", a, p, n, driver.ErrInvalidValue)
	}
	err := d.call(func() error { return check(memAdvise(uintptr(p), n, int(a), int32(loc))) })
	if err != nil {
		return fmt.Errorf("cuda: advise %v [%v, +%d) for %v: %w", a, p, n, loc, err)
	}
	return nil
}

// RangeAttributes reads the attributes of the managed bytes [p, p+n) in
// one cuMemRangeGetAttributes.
func (d *Device) RangeAttributes(p devarray.Ptr, n int64) (driver.RangeAttributes, error) {
	if n <= 0 {
		return driver.RangeAttributes{}, fmt.Errorf("cuda: range attributes [%v, +%d): %w", p, n, driver.ErrInvalidValue)
	}
	var ints [3]int32
	accessed := make([]int32, maxAccessedByLocations)
	err := d.call(func() error { return check(memRangeGetAttributes(uintptr(p), n, &ints, accessed)) })
	if err != nil {
		return driver.RangeAttributes{}, fmt.Errorf("cuda: range attributes [%v, +%d): %w", p, n, err)
	}
	ra := driver.RangeAttributes{ReadMostly: ints[0] != 0, PreferredLocation: driver.Location(ints[1]), LastPrefetchLocation: driver.Location(ints[2])}
	for _, l := range accessed {
		if l != deviceInvalid {
			ra.AccessedBy = append(ra.AccessedBy, driver.Location(l))
		}
	}
	slices.Sort(ra.AccessedBy)
	return ra, nil
}

// AttachMem attaches the managed allocation at p to the stream with
// attach (cuStreamAttachMemAsync), in the stream's order. "For managed
// allocations, length must be either zero or the entire allocation's
// size. Both indicate that the entire allocation's stream association is
// being changed": n is 0 or the bytes MallocManaged was asked for, which
// go to the driver as 0, since the driver was asked for them rounded up
// to 256; any other length of an allocation of this device is refused
// here, as sim refuses it. A pointer this device did not allocate goes to
// the driver as it is.
func (s *stream) AttachMem(p devarray.Ptr, n int64, attach devarray.Attach) error {
	op := fmt.Sprintf("attach %v managed %v", attach, p)
	if n < 0 {
		return fmt.Errorf("cuda: %s: %d bytes: %w", op, n, driver.ErrInvalidValue)
	}
	s.d.mu.Lock()
	asked, ours := s.d.managed[p]
	s.d.mu.Unlock()
	if ours && n != 0 && n != asked {
		return fmt.Errorf("cuda: %s: %d bytes, not 0 or the allocation's %d: %w", op, n, asked, driver.ErrInvalidValue)
	}
	if ours {
		n = 0
	}
	return s.enqueue(op, func() error {
		return check(streamAttachMemAsync(cstream(s.s), uintptr(p), n, uint32(attach)))
	})
}

// Prefetch migrates the managed bytes [p, p+n) to loc in the stream's
// order (cuMemPrefetchAsync). A GPU tells the bytes the driver moves only
// through CUPTI's unified-memory counters: the ledger gets them on
// accounting.PathPrefetch at the device's next Synchronize, where CUPTI
// could be started (recordMigrations; else the ledger's
// ManagedStats.Uncounted says why).
func (s *stream) Prefetch(p devarray.Ptr, n int64, loc driver.Location) error {
	if n <= 0 {
		return fmt.Errorf("cuda: prefetch managed [%v, +%d): %w", p, n, driver.ErrInvalidValue)
	}
	return s.enqueue(fmt.Sprintf("prefetch managed [%v, +%d) to %v", p, n, loc), func() error {
		return check(memPrefetchAsync(uintptr(p), n, int32(loc), cstream(s.s)))
	})
}

// HostAccess returns the managed bytes [p, p+n) for the host to touch in
// place: the pointer "is valid on the CPU and on all GPUs in the system
// that support managed memory" (cuMemAllocManaged), and the driver moves
// the pages on the host's faults. On a GPU without concurrent managed
// access, where the host may not touch managed memory while the GPU is
// active, it is refused (driver.ErrManagedBusy) while a stream of the
// device still has work queued (cuStreamQuery): the backend cannot see
// the driver's logical activity, which lasts until the host synchronizes,
// so this check is weaker than sim's.
func (d *Device) HostAccess(p devarray.Ptr, n int64, write bool) ([]byte, error) {
	op := fmt.Sprintf("cuda: host access to managed [%v, +%d)", p, n)
	if err := d.closedErr("host access to managed memory"); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("%s: %w", op, driver.ErrInvalidValue)
	}
	d.mu.Lock()
	base, size, ok := d.managedHolding(p)
	streams := make([]*stream, 0, len(d.streams))
	for s := range d.streams {
		streams = append(streams, s)
	}
	d.mu.Unlock()
	if !ok || int64(p-base)+n > size {
		return nil, fmt.Errorf("%s: not inside one managed allocation: %w", op, driver.ErrInvalidValue)
	}
	if !d.ConcurrentManagedAccess() {
		err := d.call(func() error {
			if err := fromCu(cu.Stream{}.Query()); err != nil {
				return err
			}
			for _, s := range streams {
				if err := fromCu(s.s.Query()); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, driver.ErrNotReady) {
			return nil, fmt.Errorf("%s: the device has work in flight: %w", op, driver.ErrManagedBusy)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	if err := d.call(func() error { return hostTouch(p, n, write) }); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	// The driver's pointer, never Go's memory: made without converting a
	// uintptr to a pointer, as cpool makes a pool's handle.
	var at *byte
	*(*uintptr)(unsafe.Pointer(&at)) = uintptr(p)
	return unsafe.Slice(at, n), nil
}

// managedHolding returns the live managed allocation that holds p. The
// caller holds d.mu.
func (d *Device) managedHolding(p devarray.Ptr) (base devarray.Ptr, size int64, ok bool) {
	for b := range d.managed {
		if s := d.allocs[b]; p >= b && int64(p-b) < s {
			return b, s, true
		}
	}
	return 0, 0, false
}
