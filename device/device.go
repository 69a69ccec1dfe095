// Package device opens the device cuarray works on and defines what a device
// can do: allocate, free and copy memory, run streams and events, and count
// all of it in its ledger.
//
// Open("") gives cuda:0 when the program was built with -tags cuda and a GPU
// answers, else the emulated device sim:0, so the same program runs on a
// laptop, in CI and on a GPU machine:
//
//	dev, err := device.Open("")
//	if err != nil { ... }
//	defer dev.Close()
//	a, err := devarray.Empty(dev, devarray.Float32, 512, 512)
//	...
//	fmt.Print(dev.Ledger().Report())
package device

import (
	"github.com/cuarray/cuarray/device/driver"
)

// The interfaces and types of package driver, under the names users see.
type (
	// Device is one GPU or its emulation; see driver.Device.
	Device = driver.Device
	// Stream is an ordered queue of device work; see driver.Stream.
	Stream = driver.Stream
	// Event marks a point in a stream; see driver.Event.
	Event = driver.Event
	// Info describes a device; see driver.Info.
	Info = driver.Info
	// HostFlags select page-locked host memory; see driver.HostFlags.
	HostFlags = driver.HostFlags
	// HostMem is page-locked host memory; see driver.HostMem.
	HostMem = driver.HostMem
	// MemPool is a stream-ordered memory pool; see driver.MemPool.
	MemPool = driver.MemPool
	// ReusePolicy is one of a stream-ordered pool's reuse policies; see driver.ReusePolicy.
	ReusePolicy = driver.ReusePolicy
	// PoolUsage are a stream-ordered pool's reserved and used bytes; see driver.PoolUsage.
	PoolUsage = driver.PoolUsage
	// PhysicalHandle names physical memory made for virtual memory; see driver.PhysicalHandle.
	PhysicalHandle = driver.PhysicalHandle
	// Granularity is the granularity of virtual memory; see driver.Granularity.
	Granularity = driver.Granularity
	// Location is where managed memory's pages live or are advised for; see driver.Location.
	Location = driver.Location
	// Advice is a hint about how managed memory is used; see driver.Advice.
	Advice = driver.Advice
	// RangeAttributes are a managed range's attributes; see driver.RangeAttributes.
	RangeAttributes = driver.RangeAttributes
	// PageableAccess is how a device reaches pageable host memory; see driver.PageableAccess.
	PageableAccess = driver.PageableAccess
)

// The ways a device reaches pageable host memory.
const (
	PageableNone = driver.PageableNone
	PageableHMM  = driver.PageableHMM
	PageableATS  = driver.PageableATS
)

// The locations of managed memory that are no device, and the advice.
const (
	HostLocation                 = driver.HostLocation
	NoLocation                   = driver.NoLocation
	AdviseReadMostly             = driver.AdviseReadMostly
	AdviseUnsetReadMostly        = driver.AdviseUnsetReadMostly
	AdvisePreferredLocation      = driver.AdvisePreferredLocation
	AdviseUnsetPreferredLocation = driver.AdviseUnsetPreferredLocation
	AdviseAccessedBy             = driver.AdviseAccessedBy
	AdviseUnsetAccessedBy        = driver.AdviseUnsetAccessedBy
)

// The reuse policies of a stream-ordered pool.
const (
	ReuseFollowEventDependencies   = driver.ReuseFollowEventDependencies
	ReuseAllowOpportunistic        = driver.ReuseAllowOpportunistic
	ReuseAllowInternalDependencies = driver.ReuseAllowInternalDependencies
	NumReusePolicies               = driver.NumReusePolicies
)

// The host allocation flags.
const (
	Portable      = driver.Portable
	Mapped        = driver.Mapped
	WriteCombined = driver.WriteCombined
)

// The errors every backend's errors wrap; see package driver.
var (
	ErrOutOfMemory    = driver.ErrOutOfMemory
	ErrNoDevice       = driver.ErrNoDevice
	ErrBadSpec        = driver.ErrBadSpec
	ErrInvalidValue   = driver.ErrInvalidValue
	ErrInvalidPointer = driver.ErrInvalidPointer
	ErrNotMapped      = driver.ErrNotMapped
	ErrNotReady       = driver.ErrNotReady
	ErrClosed         = driver.ErrClosed
	ErrInjected       = driver.ErrInjected
	ErrContextFailed  = driver.ErrContextFailed
	ErrStreamRace     = driver.ErrStreamRace
	ErrManagedBusy    = driver.ErrManagedBusy
	// ErrNoPageableAccess: the device cannot use pageable host memory in
	// place (devarray.FromPageable).
	ErrNoPageableAccess = driver.ErrNoPageableAccess
)
