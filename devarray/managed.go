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
}

// EmptyManaged allocates an uninitialised C-contiguous array of managed
// memory (cuMemAllocManaged) on b, attached with attach: AttachGlobal
// (any stream may use it) or AttachHost (no device stream may, until a
// stream attaches it). Its pages live where they were last used; the
// device's ledger counts the bytes under the managed kind. Free frees it.
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
	p, err := mb.MallocManaged(nbytes, attach)
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
