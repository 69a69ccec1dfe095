package driver

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
)

// PageableAccess is how a device reaches the program's pageable host
// memory (a Go slice that is neither page-locked nor managed) from its
// kernels, as two device attributes tell it. The Driver API's reference
// (cuda.h, CUdevice_attribute):
//
//   - CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: "Device supports
//     coherently accessing pageable memory without calling
//     cudaHostRegister on it."
//   - CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
//     "Device accesses pageable memory via the host's page tables."
//
// The first is 1 on Linux with the open kernel modules and HMM
// (heterogeneous memory management), and where the GPU shares the CPU's
// page tables (ATS: Grace Hopper), where the second is 1 too.
type PageableAccess uint8

// The ways a device reaches pageable host memory.
const (
	// PageableNone: the device cannot touch pageable memory: copy it, or
	// use page-locked (mapped) or managed memory (PAGEABLE_MEMORY_ACCESS
	// 0), as on most GPUs, and every one without HMM or ATS.
	PageableNone PageableAccess = iota
	// PageableHMM: the device touches pageable memory through the
	// driver's mirror of the host's page tables (PAGEABLE_MEMORY_ACCESS 1,
	// USES_HOST_PAGE_TABLES 0): HMM on Linux with the open kernel modules.
	PageableHMM
	// PageableATS: the device touches pageable memory through the host's
	// own page tables (both attributes 1): address translation services,
	// as on Grace Hopper.
	PageableATS
)

var pageableAccessNames = []string{"none", "hmm", "ats"}

// PageableAccessOf returns the access the two attributes' values describe:
// PAGEABLE_MEMORY_ACCESS (access) and
// PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES (hostPageTables).
func PageableAccessOf(access, hostPageTables int) PageableAccess {
	switch {
	case access == 0:
		return PageableNone
	case hostPageTables != 0:
		return PageableATS
	}
	return PageableHMM
}

// Supported reports whether the device's kernels may touch pageable
// memory in place (PAGEABLE_MEMORY_ACCESS 1).
func (a PageableAccess) Supported() bool { return a == PageableHMM || a == PageableATS }

// Attributes returns the values of PAGEABLE_MEMORY_ACCESS and
// PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES that describe a.
func (a PageableAccess) Attributes() (access, hostPageTables int) {
	switch a {
	case PageableHMM:
		return 1, 0
	case PageableATS:
		return 1, 1
	}
	return 0, 0
}

// String returns "none", "hmm" or "ats".
func (a PageableAccess) String() string {
	if int(a) < len(pageableAccessNames) {
		return pageableAccessNames[a]
	}
	return fmt.Sprintf("PageableAccess(%d)", uint8(a))
}

// ParsePageableAccess returns the access named s: "none", "hmm" or "ats".
func ParsePageableAccess(s string) (PageableAccess, error) {
	for i, name := range pageableAccessNames {
		if s == name {
			return PageableAccess(i), nil
		}
	}
	return PageableNone, fmt.Errorf("pageable access %q: want none, hmm or ats: %w", s, ErrInvalidValue)
}

// PageableMemory is a device's use of the program's pageable host memory
// in place, by its host address, where the device can (PageableAccess).
type PageableMemory interface {
	// PageableAccess reports how the device reaches pageable host memory.
	PageableAccess() PageableAccess
	// UsePageable returns the address at which the device's kernels read
	// and write b in place: its host address. The caller keeps b where it
	// is (runtime.Pinner for Go memory) until ReleasePageable. Where the
	// device has no pageable memory access, it is an error wrapping
	// ErrNoPageableAccess. Nothing is allocated or counted: the memory is
	// the program's.
	UsePageable(b []byte) (devarray.Ptr, error)
	// ReleasePageable ends a UsePageable of the same b. The device's work
	// that uses b must be done.
	ReleasePageable(b []byte) error
}

var _ devarray.PageableBackend = Device(nil)

// ErrNoPageableAccess is devarray.ErrNoPageableAccess: the device cannot
// touch pageable host memory in place.
var ErrNoPageableAccess = devarray.ErrNoPageableAccess
