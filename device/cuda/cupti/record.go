package cupti

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// CounterKind is a unified-memory counter kind, CUpti_ActivityUnifiedMemoryCounterKind.
type CounterKind uint32

// The counter kinds of cupti_activity.h (CUDA 11.8).
const (
	KindBytesHtoD    CounterKind = 1 // CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD
	KindBytesDtoH    CounterKind = 2 // ..._BYTES_TRANSFER_DTOH
	KindCPUPageFault CounterKind = 3 // ..._CPU_PAGE_FAULT_COUNT
	KindGPUPageFault CounterKind = 4 // ..._GPU_PAGE_FAULT
	KindThrashing    CounterKind = 5 // ..._THRASHING
	KindThrottling   CounterKind = 6 // ..._THROTTLING
	KindRemoteMap    CounterKind = 7 // ..._REMOTE_MAP
	KindBytesDtoD    CounterKind = 8 // ..._BYTES_TRANSFER_DTOD
	kindCount                    = 9 // ..._COUNT: the kinds are 1 to kindCount-1
)

// activityKindUMCounter is CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER, a record's first field.
const activityKindUMCounter uint32 = 25

var kindNames = [kindCount]string{"unknown", "bytes HtoD", "bytes DtoH", "CPU page fault",
	"GPU page fault", "thrashing", "throttling", "remote map", "bytes DtoD"}

func (k CounterKind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return fmt.Sprintf("CounterKind(%d)", uint32(k))
}

// AllKinds are the kinds Start asks for; BasicKinds the ones it falls back to where CUPTI
// refuses the others (the byte counters, which every platform with the counters has).
var (
	AllKinds = []CounterKind{KindBytesHtoD, KindBytesDtoH, KindCPUPageFault, KindGPUPageFault,
		KindThrashing, KindThrottling, KindRemoteMap, KindBytesDtoD}
	BasicKinds = []CounterKind{KindBytesHtoD, KindBytesDtoH}
)

// The layout of CUpti_ActivityUnifiedMemoryCounter2 (packed, 8-byte aligned): the cuda build
// asserts each offset against the header's offsetof (load_linux.go).
const (
	RecordSize     = 64 // sizeof(CUpti_ActivityUnifiedMemoryCounter2)
	offKind        = 0  // CUpti_ActivityKind kind
	offCounterKind = 4  // CUpti_ActivityUnifiedMemoryCounterKind counterKind
	offValue       = 8  // uint64_t value
	offStart       = 16 // uint64_t start
	offEnd         = 24 // uint64_t end
	offAddress     = 32 // uint64_t address
	offSrcID       = 40 // uint32_t srcId
	offDstID       = 44 // uint32_t dstId
	offStreamID    = 48 // uint32_t streamId
	offProcessID   = 52 // uint32_t processId
	offFlags       = 56 // uint32_t flags
)

// CPUDeviceID is the id CUPTI gives the CPU in SrcID and DstID (CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID).
const CPUDeviceID = 0xFFFFFFFF

// Record is one unified-memory counter record. Value is bytes for the byte, thrashing and
// remote-map kinds, fault groups for a GPU page fault, and a program counter for a CPU page
// fault; Start and End are nanoseconds; SrcID and DstID are device ordinals or CPUDeviceID.
type Record struct {
	Kind      CounterKind
	Value     uint64
	Start     uint64
	End       uint64
	Address   uint64
	SrcID     uint32
	DstID     uint32
	StreamID  uint32
	ProcessID uint32
	Flags     uint32
}

// ErrBadRecord is a record ParseRecords cannot read.
var ErrBadRecord = errors.New("bad unified-memory counter record")

// RecordError is a bad record: where it starts in the bytes and what is wrong with it.
type RecordError struct {
	Offset int
	Reason string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("cupti: %v at byte %d: %s", ErrBadRecord, e.Offset, e.Reason)
}

func (e *RecordError) Unwrap() error { return ErrBadRecord }

// ParseRecords reads records laid out back to back, RecordSize bytes each, in the machine's
// (little-endian) byte order, as the activity buffers hold them. It returns a *RecordError,
// matching ErrBadRecord, for a length that is not a whole number of records, a record of
// another activity kind, an unknown counter kind, or a byte count over what an int64 holds.
func ParseRecords(b []byte) ([]Record, error) {
	if len(b)%RecordSize != 0 {
		return nil, &RecordError{Offset: len(b) - len(b)%RecordSize,
			Reason: fmt.Sprintf("%d bytes left over, a record is %d", len(b)%RecordSize, RecordSize)}
	}
	out := make([]Record, 0, len(b)/RecordSize)
	for off := 0; off < len(b); off += RecordSize {
		r, err := parseRecord(b[off : off+RecordSize])
		if err != nil {
			return nil, &RecordError{Offset: off, Reason: err.Error()}
		}
		out = append(out, r)
	}
	return out, nil
}

// parseRecord reads one record of exactly RecordSize bytes.
func parseRecord(b []byte) (Record, error) {
	le := binary.LittleEndian
	if kind := le.Uint32(b[offKind:]); kind != activityKindUMCounter {
		return Record{}, fmt.Errorf("activity kind %d, want %d (unified-memory counter)", kind, activityKindUMCounter)
	}
	r := Record{
		Kind:      CounterKind(le.Uint32(b[offCounterKind:])),
		Value:     le.Uint64(b[offValue:]),
		Start:     le.Uint64(b[offStart:]),
		End:       le.Uint64(b[offEnd:]),
		Address:   le.Uint64(b[offAddress:]),
		SrcID:     le.Uint32(b[offSrcID:]),
		DstID:     le.Uint32(b[offDstID:]),
		StreamID:  le.Uint32(b[offStreamID:]),
		ProcessID: le.Uint32(b[offProcessID:]),
		Flags:     le.Uint32(b[offFlags:]),
	}
	if r.Kind == 0 || r.Kind >= kindCount {
		return Record{}, fmt.Errorf("unknown counter kind %d", uint32(r.Kind))
	}
	if r.Value > maxCount {
		return Record{}, fmt.Errorf("%v value %d is over %d", r.Kind, r.Value, uint64(maxCount))
	}
	return r, nil
}
