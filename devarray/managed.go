package devarray

import (
	"fmt"
	"strconv"
)

// Attach is the stream association of managed memory, as cuMemAllocManaged
// and cuStreamAttachMemAsync take it (CUmemAttach_flags): which streams'
// work may touch the memory on a device that cannot access managed memory
// concurrently with the host.
type Attach uint8

// The stream associations, with the Driver API's values.
const (
	// AttachGlobal: "the memory can be accessed by any stream on any
	// device" (CU_MEM_ATTACH_GLOBAL).
	AttachGlobal Attach = 1
	// AttachHost: the program "won't access the memory on the device from
	// any stream on a device that has a zero value for the device
	// attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS"
	// (CU_MEM_ATTACH_HOST).
	AttachHost Attach = 2
	// AttachSingle: only the stream the memory is attached to touches it
	// on the device (CU_MEM_ATTACH_SINGLE; cuStreamAttachMemAsync only).
	AttachSingle Attach = 4
)

// String returns the association's name: "global", "host", "single".
func (a Attach) String() string {
	switch a {
	case AttachGlobal:
		return "global"
	case AttachHost:
		return "host"
	case AttachSingle:
		return "single"
	}
	return "Attach(" + strconv.Itoa(int(a)) + ")"
}

// ManagedBackend is a Backend that allocates managed (unified) memory,
// one address valid on the host and on the device whose pages the driver
// moves where they are used: every device.Device is one.
type ManagedBackend interface {
	Backend
	// MallocManaged allocates nbytes of managed memory attached with
	// attach, AttachGlobal or AttachHost (cuMemAllocManaged). Free frees it.
	MallocManaged(nbytes int64, attach Attach) (Ptr, error)
	// HostAccess returns the managed bytes [p, p+n) for the host to read
	// in place (and write, when write), or an error where the device owns
	// them now (no concurrent managed access, its work not synchronized).
	HostAccess(p Ptr, n int64, write bool) ([]byte, error)
}

// EmptyManaged allocates an uninitialised C-contiguous array of managed
// memory (cuMemAllocManaged) on b, attached with attach: AttachGlobal
// (any stream may use it) or AttachHost (no device stream may, until a
// stream attaches it). Its pages live where they were last used; the
// device's ledger counts the bytes under the managed kind. An array of no
// elements still gets a distinct, valid pointer, as Empty's does. Free
// frees it.
func EmptyManaged(b Backend, attach Attach, dtype DType, shape ...int) (*DevArray, error) {
	if b == nil {
		return nil, fmt.Errorf("devarray: empty managed: %w", ErrNoBackend)
	}
	mb, ok := b.(ManagedBackend)
	if !ok {
		return nil, fmt.Errorf("devarray: empty managed: the backend allocates no managed memory: %w", ErrNoBackend)
	}
	if !dtype.Valid() {
		return nil, fmt.Errorf("devarray: empty managed: %v: %w", dtype, ErrDType)
	}
	lay, err := newLayout(shape, nil, dtype.Size())
	if err != nil {
		return nil, fmt.Errorf("devarray: empty managed: %w", err)
	}
	nbytes := lay.size * dtype.Size()
	// An array of no elements takes a byte: cuMemAllocManaged refuses 0.
	p, err := mb.MallocManaged(max(nbytes, 1), attach)
	if err != nil {
		return nil, fmt.Errorf("devarray: allocate %v %v (%d bytes) of managed memory: %w", shape, dtype, nbytes, err)
	}
	buf := &buffer{backend: b, device: b.DeviceID(), base: p, size: nbytes, owned: true, managed: true}
	return &DevArray{buf: buf, lay: lay, dtype: dtype}, nil
}

// Managed reports whether the array's memory is managed (EmptyManaged).
func (a *DevArray) Managed() bool {
	return a != nil && a.buf != nil && a.buf.managed
}

// HostView returns the bytes of a managed array, from the lowest its
// elements touch to one past the highest (Extent), as host memory the
// program reads in place, and writes when write: no copy, the pages move
// to the host as the driver moves them on the host's faults (the device's
// ledger records the bytes as migrated). An array not managed is
// ErrNotManaged, a write to a read-only one ErrReadOnly. Where the device
// has no concurrent managed access, the host may touch managed memory
// only while the device's work that may use it is synchronized with: at
// another moment the call fails (on a GPU the access would fault). The
// check holds at the call: queue device work that uses the array only
// once the host is done with the view, and call HostView again after it.
// The view is valid until the array is freed.
func (a *DevArray) HostView(write bool) ([]byte, error) {
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("devarray: host view: %w", err)
	}
	if !a.buf.managed {
		return nil, fmt.Errorf("devarray: host view of %v: %w", a, ErrNotManaged)
	}
	if write && a.readonly {
		return nil, fmt.Errorf("devarray: host view of %v for writing: %w", a, ErrReadOnly)
	}
	release, err := a.Hold()
	if err != nil {
		return nil, fmt.Errorf("devarray: host view: %w", err)
	}
	defer release()
	lo, hi := a.lay.lo, a.lay.hi
	if hi == lo {
		return []byte{}, nil
	}
	b, err := a.buf.backend.(ManagedBackend).HostAccess(a.Ptr()+Ptr(lo), hi-lo, write)
	if err != nil {
		return nil, fmt.Errorf("devarray: host view of %v: %w", a, err)
	}
	return b, nil
}
