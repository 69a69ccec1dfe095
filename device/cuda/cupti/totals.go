package cupti

import (
	"fmt"
	"math"
)

// maxCount is the largest value a record may carry: Totals keep int64s.
const maxCount = math.MaxInt64

// Totals are what a Counter counted: bytes the driver migrated, by direction, and the events
// of each other kind, from the records delivered so far.
type Totals struct {
	BytesHtoD      int64 // bytes migrated host to device
	BytesDtoH      int64 // bytes migrated device to host
	BytesDtoD      int64 // bytes migrated between devices
	PrefetchedHtoD int64 // of BytesHtoD, the bytes an explicit prefetch moved (cuMemPrefetchAsync)
	PrefetchedDtoH int64 // of BytesDtoH, the bytes an explicit prefetch moved
	CPUPageFaults  int64 // CPU page faults on managed memory
	GPUPageFaults  int64 // GPU page faults on managed memory (one a faulting page)
	GPUFaultGroups int64 // the fault groups those faults held
	Thrashing      int64 // thrashing events
	ThrashingBytes int64 // the bytes of the regions that thrashed
	Throttling     int64 // throttling events
	RemoteMaps     int64 // remote mappings
	RemoteMapBytes int64 // the bytes remotely mapped
	Records        int64 // unified-memory counter records read
	OtherRecords   int64 // records of other activity kinds, skipped
	Dropped        int64 // records CUPTI dropped for want of a buffer
}

// CauseUser is the migration cause, in a byte record's Flags, of bytes an
// explicit prefetch moved: "The unified memory migrated due to an explicit
// call from the user e.g. cudaMemPrefetchAsync"
// (CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER, cupti_activity.h; the
// record's flags hold "CUpti_ActivityUnifiedMemoryMigrationCause if
// counterKind is CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD"
// or DTOH).
const CauseUser = 1

// Migrated is the bytes migrated in every direction.
func (t Totals) Migrated() int64 { return t.BytesHtoD + t.BytesDtoH + t.BytesDtoD }

// String is the totals on one line.
func (t Totals) String() string {
	return fmt.Sprintf("migrated HtoD %d B (%d B prefetched), DtoH %d B (%d B prefetched), DtoD %d B; page faults CPU %d, GPU %d (%d groups); "+
		"thrashing %d (%d B), throttling %d, remote maps %d (%d B); records %d, other %d, dropped %d",
		t.BytesHtoD, t.PrefetchedHtoD, t.BytesDtoH, t.PrefetchedDtoH, t.BytesDtoD, t.CPUPageFaults, t.GPUPageFaults, t.GPUFaultGroups,
		t.Thrashing, t.ThrashingBytes, t.Throttling, t.RemoteMaps, t.RemoteMapBytes,
		t.Records, t.OtherRecords, t.Dropped)
}

// Add counts one record. It returns an error, and counts nothing, for a record ParseRecords
// would refuse or one that would take a total past what an int64 holds.
func (t *Totals) Add(r Record) error {
	if r.Kind == 0 || r.Kind >= kindCount || r.Value > maxCount {
		return fmt.Errorf("cupti: %w: %v with value %d", ErrBadRecord, r.Kind, r.Value)
	}
	v := int64(r.Value)
	next, ok := *t, true
	switch r.Kind {
	case KindBytesHtoD:
		next.BytesHtoD, ok = sum(next.BytesHtoD, v)
		if ok && r.Flags == CauseUser {
			next.PrefetchedHtoD += v // no more than BytesHtoD, which did not overflow
		}
	case KindBytesDtoH:
		next.BytesDtoH, ok = sum(next.BytesDtoH, v)
		if ok && r.Flags == CauseUser {
			next.PrefetchedDtoH += v
		}
	case KindBytesDtoD:
		next.BytesDtoD, ok = sum(next.BytesDtoD, v)
	case KindCPUPageFault:
		next.CPUPageFaults++
	case KindGPUPageFault:
		next.GPUPageFaults++
		next.GPUFaultGroups, ok = sum(next.GPUFaultGroups, v)
	case KindThrashing:
		next.Thrashing++
		next.ThrashingBytes, ok = sum(next.ThrashingBytes, v)
	case KindThrottling:
		next.Throttling++
	case KindRemoteMap:
		next.RemoteMaps++
		next.RemoteMapBytes, ok = sum(next.RemoteMapBytes, v)
	}
	if !ok {
		return fmt.Errorf("cupti: %w: %v of %d takes its total past %d", ErrBadRecord, r.Kind, v, int64(maxCount))
	}
	next.Records++
	*t = next
	return nil
}

// sum is a+b for a, b >= 0, and false where it would overflow.
func sum(a, b int64) (int64, bool) {
	if a > maxCount-b {
		return a, false
	}
	return a + b, true
}
