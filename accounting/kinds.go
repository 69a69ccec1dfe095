package accounting

import (
	"fmt"
	"strconv"
)

// Kind is a kind of memory the ledger counts.
type Kind uint8

// The memory kinds. A page-locked host allocation counts under one kind:
// WriteCombined if it is write-combined, else Mapped if it is mapped into the
// device, else Pinned.
const (
	Device        Kind = iota // device memory (cuMemAlloc)
	Pinned                    // page-locked host memory (cuMemHostAlloc)
	Mapped                    // page-locked host memory mapped into the device
	WriteCombined             // page-locked, write-combined host memory
	Registered                // existing host memory page-locked by cuMemHostRegister
	Managed                   // unified memory (cuMemAllocManaged)
	Host                      // pageable host memory
	IPC                       // another process's device memory, opened through a CUDA IPC handle
	// StreamOrdered is device memory handed out by a stream-ordered pool
	// (cuMemAllocAsync, cuMemAllocFromPoolAsync), counted from the
	// allocation to its cuMemFreeAsync: the bytes asked for, rounded up to
	// 256. The pools' own reserved and used bytes are the snapshot's Pools.
	StreamOrdered
	// VirtualAddress is device address space reserved for virtual memory
	// (cuMemAddressReserve), counted until cuMemAddressFree: addresses,
	// not memory; the memory mapped into them is Physical.
	VirtualAddress
	// Physical is device memory made for virtual memory (cuMemCreate),
	// counted from its creation until it is freed: released
	// (cuMemRelease) and unmapped from every range it was mapped into.
	Physical
	NumKinds // the number of kinds
)

var kindNames = [NumKinds]string{"device", "pinned", "mapped", "write-combined", "registered", "managed", "host", "ipc", "stream-ordered", "virtual-address", "physical"}

// String returns the kind's name ("device", "pinned", ...).
func (k Kind) String() string {
	if k >= NumKinds {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// Direction is the direction of a copy.
type Direction uint8

// The copy directions.
const (
	HtoD          Direction = iota // host to device
	DtoH                           // device to host
	DtoD                           // within one device
	HtoH                           // host to host (staging)
	Peer                           // between two devices
	Net                            // between this process and other processes, through MPI (package mpi): bytes sent plus bytes received
	NumDirections                  // the number of directions
)

var directionNames = [NumDirections]string{"HtoD", "DtoH", "DtoD", "HtoH", "peer", "net"}

// String returns the direction's name ("HtoD", ...).
func (d Direction) String() string {
	if d >= NumDirections {
		return "Direction(" + strconv.Itoa(int(d)) + ")"
	}
	return directionNames[d]
}

// Path is the way a copy's bytes travelled.
type Path uint8

// The copy paths.
const (
	PathDirect     Path = iota // driver copy from or to pageable host memory
	PathPinned                 // DMA from or to page-locked host memory
	PathStaged                 // pageable memory moved through pinned staging chunks (HtoD/DtoH time: the whole copies' wall time, see RecordCopy)
	PathMapped                 // a kernel read or wrote mapped host memory in place
	PathD2D                    // device-to-device copy on one device
	PathPeer                   // copy between two devices
	PathKernel                 // a kernel moved the bytes (pack, unpack, gather)
	PathRegistered             // registrations of the caller's own memory for a copy (cuMemHostRegister), each a copy of 0 bytes taking the registration's time; the DMA that follows is recorded under PathPinned, as every copy of page-locked memory (see transfer.PathRegistered)
	PathMPIDevice              // an MPI call (Net) given device pointers: a CUDA-aware MPI moved device memory itself
	PathMPIStaged              // an MPI call (Net) given page-locked host buffers that device memory was copied through; those copies are recorded as HtoD and DtoH on PathPinned
	PathPrefetch               // managed memory's pages the driver moved for a prefetch (cuMemPrefetchAsync)
	PathMigrated               // managed memory's pages the driver moved on a page fault: a kernel, copy or host access touched pages resident elsewhere
	PathPageable               // a kernel read or wrote the program's pageable host memory (a Go slice) in place, on a device with pageable memory access (HMM, ATS: devarray.FromPageable)
	NumPaths                   // the number of paths
)

var pathNames = [NumPaths]string{"direct", "pinned", "staged", "mapped", "d2d", "peer", "kernel", "registered", "mpi-device", "mpi-staged", "prefetch", "migrated", "pageable"}

// String returns the path's name ("direct", "pinned", ...).
func (p Path) String() string {
	if p >= NumPaths {
		return "Path(" + strconv.Itoa(int(p)) + ")"
	}
	return pathNames[p]
}

// ParseKind returns the Kind with the given name.
func ParseKind(s string) (Kind, error) {
	for k := Kind(0); k < NumKinds; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("accounting: unknown memory kind %q: %w", s, ErrInvalidArgument)
}

// ParsePath returns the Path with the given name.
func ParsePath(s string) (Path, error) {
	for p := Path(0); p < NumPaths; p++ {
		if pathNames[p] == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("accounting: unknown copy path %q: %w", s, ErrInvalidArgument)
}
