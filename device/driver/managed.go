package driver

import (
	"errors"
	"strconv"

	"github.com/cuarray/cuarray/devarray"
)

// Location is where managed memory's pages may live or be advised for: a
// device's ordinal, HostLocation, or NoLocation (a CUdevice as
// cuMemPrefetchAsync, cuMemAdvise and cuMemRangeGetAttribute take it).
type Location int32

// The locations that are no device.
const (
	// HostLocation is host memory (CU_DEVICE_CPU).
	HostLocation Location = -1
	// NoLocation is no location, or pages that disagree (CU_DEVICE_INVALID).
	NoLocation Location = -2
)

// String returns "host", "none" or "device N".
func (l Location) String() string {
	switch l {
	case HostLocation:
		return "host"
	case NoLocation:
		return "none"
	}
	return "device " + strconv.Itoa(int(l))
}

// Advice is a hint about how managed memory is used (CUmem_advise), with
// the Driver API's values.
type Advice uint8

// The advice cuMemAdvise takes.
const (
	// AdviseReadMostly: reads make read-only copies where they happen
	// (CU_MEM_ADVISE_SET_READ_MOSTLY); the location is ignored.
	AdviseReadMostly Advice = 1 + iota
	// AdviseUnsetReadMostly undoes AdviseReadMostly, collapsing the copies.
	AdviseUnsetReadMostly
	// AdvisePreferredLocation sets where the pages should live.
	AdvisePreferredLocation
	// AdviseUnsetPreferredLocation sets the preferred location to none.
	AdviseUnsetPreferredLocation
	// AdviseAccessedBy keeps the pages mapped for the location.
	AdviseAccessedBy
	// AdviseUnsetAccessedBy undoes AdviseAccessedBy.
	AdviseUnsetAccessedBy
)

var adviceNames = []string{"read-mostly", "unset-read-mostly", "preferred-location", "unset-preferred-location", "accessed-by", "unset-accessed-by"}

// String returns the advice's name, "read-mostly", ...
func (a Advice) String() string {
	if a < AdviseReadMostly || a > AdviseUnsetAccessedBy {
		return "Advice(" + strconv.Itoa(int(a)) + ")"
	}
	return adviceNames[a-1]
}

// RangeAttributes are a managed range's attributes as
// cuMemRangeGetAttributes reads them back: each holds for every page of
// the range, else it is false, NoLocation or absent.
type RangeAttributes struct {
	// ReadMostly: every page has AdviseReadMostly.
	ReadMostly bool
	// PreferredLocation: every page's preferred location, NoLocation if
	// they differ or one has none.
	PreferredLocation Location
	// AccessedBy: the locations that have AdviseAccessedBy on every page,
	// in increasing order.
	AccessedBy []Location
	// LastPrefetchLocation: where every page was last prefetched to,
	// NoLocation if they differ or one never was. It says nothing of
	// whether that prefetch is done.
	LastPrefetchLocation Location
}

// ManagedAllocator is the managed (unified) memory of a Device: memory one
// address reaches from the host and the device, whose pages the driver
// migrates where they are touched.
type ManagedAllocator interface {
	// MallocManaged allocates nbytes of managed memory attached with
	// attach, devarray.AttachGlobal or devarray.AttachHost
	// (cuMemAllocManaged). The ledger counts it, rounded up to 256 as
	// device memory, under accounting.Managed; Free frees it.
	MallocManaged(nbytes int64, attach devarray.Attach) (devarray.Ptr, error)
	// Advise gives advice a for the managed bytes [p, p+n) and location
	// loc (cuMemAdvise; loc is ignored for the read-mostly advice).
	Advise(p devarray.Ptr, n int64, a Advice, loc Location) error
	// RangeAttributes reads the attributes of the managed bytes [p, p+n)
	// (cuMemRangeGetAttributes).
	RangeAttributes(p devarray.Ptr, n int64) (RangeAttributes, error)
	// ConcurrentManagedAccess reports whether the host may touch managed
	// memory while the device runs work
	// (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS); where it may not,
	// Prefetch to the device and AdvisePreferredLocation or
	// AdviseAccessedBy for it are refused.
	ConcurrentManagedAccess() bool
	// HostAccess returns the managed bytes [p, p+n) for the host to read
	// in place (and write, when write), their pages moved to the host.
	// Where the device has no concurrent managed access and its work may
	// use the memory now, it is an error wrapping ErrManagedBusy.
	HostAccess(p devarray.Ptr, n int64, write bool) ([]byte, error)
}

// ManagedStream is the managed-memory work of a Stream.
type ManagedStream interface {
	// AttachMem attaches the whole managed allocation at p to this stream
	// with attach (cuStreamAttachMemAsync; n is 0 or the bytes
	// MallocManaged was asked for, not that size rounded up): AttachSingle
	// lets only this stream's work touch it on a device without concurrent
	// managed access, and the host touch it once this stream's work is
	// done. It takes effect in stream order.
	AttachMem(p devarray.Ptr, n int64, attach devarray.Attach) error
	// Prefetch migrates the managed bytes [p, p+n) to loc in the stream's
	// order (cuMemPrefetchAsync): to the device only where it has
	// concurrent managed access.
	Prefetch(p devarray.Ptr, n int64, loc Location) error
}

var _ devarray.ManagedBackend = Device(nil)

// ErrManagedBusy: the host touched managed memory that the device owns at
// that moment: on a device without concurrent managed access
// (ManagedAllocator.ConcurrentManagedAccess), while device work that may
// use it is in flight or not yet synchronized with. On a GPU that is a
// segmentation fault; sim and the emulated driver refuse it.
var ErrManagedBusy = errors.New("managed memory is the device's while its work runs (no concurrent managed access): synchronize the stream or device first")
