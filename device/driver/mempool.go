package driver

import (
	"strconv"

	"github.com/cuarray/cuarray/devarray"
)

// MemPool is a stream-ordered memory pool (CUmemoryPool): the memory
// Stream.MallocAsync and MallocFromPoolAsync hand out and FreeAsync gives
// back, reused in stream order. Each device has a default pool
// (Device.DefaultMemPool, cuDeviceGetDefaultMemPool); NewMemPool makes
// others (cuMemPoolCreate). Bytes handed out are counted in the ledger
// under accounting.StreamOrdered; the pool's own reserved and used figures
// (Usage) are in the ledger's report and JSON too, per pool.
type MemPool interface {
	// Name names the pool in the ledger's report: "default" for a
	// device's default pool, "pool-N" for the Nth one NewMemPool made.
	Name() string
	// Handle returns the number the driver knows the pool by (a
	// CUmemoryPool on CUDA), never 0.
	Handle() uintptr
	// SetReleaseThreshold sets CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: the
	// reserved bytes the pool keeps at a synchronize; above it, memory
	// whose frees are complete goes back to the device. 0 (the default)
	// keeps none.
	SetReleaseThreshold(bytes int64) error
	// ReleaseThreshold returns CU_MEMPOOL_ATTR_RELEASE_THRESHOLD.
	ReleaseThreshold() (int64, error)
	// SetReuse allows or forbids one of the reuse policies (all three are
	// allowed by default).
	SetReuse(p ReusePolicy, allow bool) error
	// Reuse reports whether policy p is allowed.
	Reuse(p ReusePolicy) (bool, error)
	// TrimTo gives reserved memory back to the device until the pool holds
	// no less than keep bytes, or nothing more can safely go
	// (cuMemPoolTrimTo).
	TrimTo(keep int64) error
	// Usage returns the pool's reserved and used bytes, now and at their
	// highest (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT/HIGH,
	// USED_MEM_CURRENT/HIGH).
	Usage() (PoolUsage, error)
	// ResetHigh sets both high figures to the current ones (setting
	// RESERVED_MEM_HIGH and USED_MEM_HIGH to 0).
	ResetHigh() error
	// Destroy destroys a pool NewMemPool made (cuMemPoolDestroy): at once
	// if nothing of it is in use, else once its last allocation is freed.
	// A device's default pool cannot be destroyed (ErrInvalidValue). A
	// second Destroy is harmless.
	Destroy() error
}

// ReusePolicy is one of a stream-ordered pool's reuse policies.
type ReusePolicy uint8

// The reuse policies, as the CUDA Driver API names them.
const (
	// ReuseFollowEventDependencies: an allocation may use memory freed on
	// another stream when the allocating stream already depends on the
	// free (an event it waited on was recorded after the free)
	// (CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES).
	ReuseFollowEventDependencies ReusePolicy = iota
	// ReuseAllowOpportunistic: an allocation may use memory whose free has
	// completed, without any dependency (CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC).
	ReuseAllowOpportunistic
	// ReuseAllowInternalDependencies: an allocation may make its stream
	// wait for another stream's free to reuse its memory
	// (CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES).
	ReuseAllowInternalDependencies
	// NumReusePolicies is the number of reuse policies.
	NumReusePolicies
)

var reuseNames = [NumReusePolicies]string{"follow-event-dependencies", "allow-opportunistic", "allow-internal-dependencies"}

// String returns the policy's name, "follow-event-dependencies", ...
func (p ReusePolicy) String() string {
	if p >= NumReusePolicies {
		return "ReusePolicy(" + strconv.Itoa(int(p)) + ")"
	}
	return reuseNames[p]
}

// PoolUsage are a stream-ordered pool's figures, in bytes: Reserved is the
// device memory the pool holds, Used the part of it handed out; the High
// figures are the highest each has been since the pool was made or
// ResetHigh was called.
type PoolUsage struct {
	Reserved     int64 `json:"reserved"`
	ReservedHigh int64 `json:"reserved_high"`
	Used         int64 `json:"used"`
	UsedHigh     int64 `json:"used_high"`
}

// AsyncAllocator is the stream-ordered allocation of a Stream: it is
// devarray.AsyncStream, which EmptyAsync and FreeAsync take.
type AsyncAllocator interface {
	// MallocAsync allocates nbytes from the device's default pool in the
	// stream's order (cuMemAllocAsync): the pointer is returned at once,
	// and the memory may be used by work queued on this stream from now
	// on (other streams: after waiting for an event recorded after this
	// call). The ledger counts the bytes, rounded up to 256, under
	// accounting.StreamOrdered.
	MallocAsync(nbytes int64) (devarray.Ptr, error)
	// MallocFromPoolAsync is MallocAsync from pool p (cuMemAllocFromPoolAsync).
	MallocFromPoolAsync(nbytes int64, p MemPool) (devarray.Ptr, error)
	// FreeAsync frees memory MallocAsync or MallocFromPoolAsync returned,
	// in the stream's order (cuMemFreeAsync): work queued on the stream
	// before it may still use the memory; nothing after it may.
	FreeAsync(p devarray.Ptr) error
}

var _ devarray.AsyncStream = AsyncAllocator(nil)
