package driver

import "github.com/cuarray/cuarray/devarray"

// PhysicalHandle names a chunk of physical device memory that
// VirtualMemory.CreatePhysical made (a CUmemGenericAllocationHandle). It
// has no address of its own: memory is reached only through a range it is
// mapped into (MapMemory) whose access was set (SetAccess).
type PhysicalHandle uint64

// Granularity is what cuMemGetAllocationGranularity reports for pinned
// memory on one device: every size, offset and mapped address of virtual
// memory is a multiple of Minimum; Recommended is the multiple that
// performs best.
type Granularity struct {
	Minimum     int64 `json:"minimum"`
	Recommended int64 `json:"recommended"`
}

// VirtualMemory is the CUDA Driver API's virtual memory management (the
// cuMem* functions of "Virtual Memory Management"): a range of device
// addresses is reserved without memory behind it, chunks of physical
// memory are made apart from any address, mapped into the range and made
// accessible; a range can so grow in place, keeping its address and its
// contents, as PyTorch's expandable segments do. The ledger counts the
// reserved address space under accounting.VirtualAddress and the physical
// memory under accounting.Physical, from its creation until it is freed
// (released and no longer mapped).
type VirtualMemory interface {
	// MemGranularity returns the minimum and recommended granularity of
	// pinned memory on this device (cuMemGetAllocationGranularity).
	MemGranularity() (Granularity, error)
	// ReserveAddress reserves size bytes of device address space aligned
	// to alignment (0: the minimum granularity) with no memory behind it
	// (cuMemAddressReserve). size must be a multiple of the minimum
	// granularity and alignment a power of two, else ErrInvalidValue.
	ReserveAddress(size, alignment int64) (devarray.Ptr, error)
	// FreeAddress frees a reservation (cuMemAddressFree): p and size as
	// ReserveAddress returned and was given, with nothing mapped in it.
	FreeAddress(p devarray.Ptr, size int64) error
	// CreatePhysical makes size bytes of pinned device memory with no
	// address (cuMemCreate); size is a multiple of the minimum
	// granularity.
	CreatePhysical(size int64) (PhysicalHandle, error)
	// ReleasePhysical releases a handle (cuMemRelease). Memory still
	// mapped stays until its last mapping is unmapped.
	ReleasePhysical(h PhysicalHandle) error
	// MapMemory maps size bytes of h, from byte offset on, at p, inside
	// a reservation where nothing is mapped yet (cuMemMap); p, size and
	// offset are multiples of the minimum granularity. The mapping is not
	// accessible until SetAccess.
	MapMemory(p devarray.Ptr, size, offset int64, h PhysicalHandle) error
	// UnmapMemory unmaps [p, p+size), whole mappings (cuMemUnmap); the
	// range is a reservation again.
	UnmapMemory(p devarray.Ptr, size int64) error
	// SetAccess makes [p, p+size), which must be mapped throughout,
	// readable and writable by this device (rw) or not accessible
	// (cuMemSetAccess with CU_MEM_ACCESS_FLAGS_PROT_READWRITE or
	// PROT_NONE). Until it is set, a copy, memset or kernel that touches
	// the range fails as one that touches unallocated memory does.
	SetAccess(p devarray.Ptr, size int64, rw bool) error
}
