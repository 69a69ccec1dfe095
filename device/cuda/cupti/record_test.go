package cupti

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rand "github.com/cuarray/cuarray/internal/testrand"
)

// encode lays a record out as CUPTI's buffers hold it, writing pad with a random word.
func encode(r Record, kind uint32, pad uint32) []byte {
	b := make([]byte, RecordSize)
	le := binary.LittleEndian
	le.PutUint32(b[offKind:], kind)
	le.PutUint32(b[offCounterKind:], uint32(r.Kind))
	le.PutUint64(b[offValue:], r.Value)
	le.PutUint64(b[offStart:], r.Start)
	le.PutUint64(b[offEnd:], r.End)
	le.PutUint64(b[offAddress:], r.Address)
	le.PutUint32(b[offSrcID:], r.SrcID)
	le.PutUint32(b[offDstID:], r.DstID)
	le.PutUint32(b[offStreamID:], r.StreamID)
	le.PutUint32(b[offProcessID:], r.ProcessID)
	le.PutUint32(b[offFlags:], r.Flags)
	le.PutUint32(b[offFlags+4:], pad)
	return b
}

// randomRecord draws a record of kind k whose value fits Totals.
func randomRecord(r *rand.Rand, k CounterKind) Record {
	return Record{Kind: k, Value: uint64(r.Int64N(1 << 40)), Start: r.Uint64(), End: r.Uint64(),
		Address: r.Uint64(), SrcID: r.Uint32(), DstID: r.Uint32(), StreamID: r.Uint32(),
		ProcessID: r.Uint32(), Flags: r.Uint32()}
}

func TestParseRecordsReadsEveryField(t *testing.T) {
	r := rand.For(t)
	for _, k := range AllKinds {
		t.Run(k.String(), func(t *testing.T) {
			n := 1 + r.IntN(8)
			want := make([]Record, n)
			var b []byte
			for i := range want {
				want[i] = randomRecord(r, k)
				b = append(b, encode(want[i], activityKindUMCounter, r.Uint32())...)
			}
			got, err := ParseRecords(b)
			require.NoError(t, err)
			assert.Equal(t, want, got, "every field at its offset, in order")
		})
	}
	got, err := ParseRecords(nil)
	require.NoError(t, err, "no bytes are no records")
	assert.Empty(t, got)
}

func TestParseRecordsRefusesBadRecords(t *testing.T) {
	r := rand.For(t)
	good := encode(randomRecord(r, KindBytesHtoD), activityKindUMCounter, r.Uint32())
	withKind := func(kind uint32, ck CounterKind, v uint64) []byte {
		rec := randomRecord(r, ck)
		rec.Value = v
		return encode(rec, kind, r.Uint32())
	}
	cases := []struct {
		name   string
		b      []byte
		offset int
		reason string
	}{
		{"short", good[:1+r.IntN(RecordSize-1)], 0, "left over"},
		{"a record and a piece", append(append([]byte{}, good...), good[:8]...), RecordSize, "left over"},
		{"memcpy record", withKind(1, KindBytesHtoD, 1), 0, "activity kind 1"},
		{"invalid activity", withKind(0, KindBytesDtoH, 1), 0, "activity kind 0"},
		{"unknown counter kind 0", withKind(activityKindUMCounter, 0, 1), 0, "unknown counter kind 0"},
		{"counter kind past the last", withKind(activityKindUMCounter, kindCount, 1), 0, "unknown counter kind 9"},
		{"counter kind huge", withKind(activityKindUMCounter, CounterKind(0x7fffffff), 1), 0, "unknown counter kind"},
		{"value over int64", withKind(activityKindUMCounter, KindBytesDtoH, math.MaxInt64+1), 0, "is over"},
		{"bad second record", append(append([]byte{}, good...), withKind(2, KindBytesHtoD, 1)...), RecordSize, "activity kind 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRecords(tc.b)
			require.ErrorIs(t, err, ErrBadRecord)
			assert.Nil(t, got, "nothing from bytes with a bad record")
			var re *RecordError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tc.offset, re.Offset, "where the bad record starts")
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
}

func FuzzParseRecords(f *testing.F) {
	f.Add([]byte{})
	f.Add(encode(Record{Kind: KindBytesHtoD, Value: 4096}, activityKindUMCounter, 0))
	f.Add(encode(Record{Kind: KindGPUPageFault, Value: 3}, activityKindUMCounter, 7)[:40])
	f.Add(encode(Record{Kind: 12, Value: 1}, activityKindUMCounter, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ParseRecords(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadRecord)
			require.Nil(t, recs)
			return
		}
		require.Len(t, recs, len(b)/RecordSize)
		var tot Totals
		for i, rec := range recs {
			// every record parsed is one Totals can count, and re-encodes to its bytes
			require.NoError(t, tot.Add(rec))
			pad := binary.LittleEndian.Uint32(b[i*RecordSize+offFlags+4:])
			require.Equal(t, b[i*RecordSize:(i+1)*RecordSize], encode(rec, activityKindUMCounter, pad))
		}
		require.Equal(t, int64(len(recs)), tot.Records)
	})
}

func TestTotalsCountEachKind(t *testing.T) {
	r := rand.For(t)
	v := func() uint64 { return uint64(1 + r.Int64N(1<<30)) }
	cases := []struct {
		kind CounterKind
		want func(uint64) Totals
	}{
		{KindBytesHtoD, func(v uint64) Totals { return Totals{BytesHtoD: int64(v)} }},
		{KindBytesDtoH, func(v uint64) Totals { return Totals{BytesDtoH: int64(v)} }},
		{KindBytesDtoD, func(v uint64) Totals { return Totals{BytesDtoD: int64(v)} }},
		{KindCPUPageFault, func(uint64) Totals { return Totals{CPUPageFaults: 1} }},
		{KindGPUPageFault, func(v uint64) Totals { return Totals{GPUPageFaults: 1, GPUFaultGroups: int64(v)} }},
		{KindThrashing, func(v uint64) Totals { return Totals{Thrashing: 1, ThrashingBytes: int64(v)} }},
		{KindThrottling, func(uint64) Totals { return Totals{Throttling: 1} }},
		{KindRemoteMap, func(v uint64) Totals { return Totals{RemoteMaps: 1, RemoteMapBytes: int64(v)} }},
	}
	for _, tc := range cases {
		t.Run(tc.kind.String(), func(t *testing.T) {
			a, b := v(), v()
			var got Totals
			require.NoError(t, got.Add(Record{Kind: tc.kind, Value: a}))
			require.NoError(t, got.Add(Record{Kind: tc.kind, Value: b}))
			want := tc.want(a)
			second := tc.want(b)
			addTotals(&want, second)
			want.Records = 2
			assert.Equal(t, want, got)
		})
	}
}

func TestTotalsTellPrefetchedBytes(t *testing.T) {
	r := rand.For(t)
	v := func() uint64 { return uint64(1 + r.Int64N(1<<30)) }
	cases := []struct {
		name  string
		kind  CounterKind
		cause uint32
		want  func(uint64) Totals
	}{
		{"HtoD by a prefetch", KindBytesHtoD, CauseUser, func(v uint64) Totals { return Totals{BytesHtoD: int64(v), PrefetchedHtoD: int64(v)} }},
		{"DtoH by a prefetch", KindBytesDtoH, CauseUser, func(v uint64) Totals { return Totals{BytesDtoH: int64(v), PrefetchedDtoH: int64(v)} }},
		{"HtoD on a fault (coherence)", KindBytesHtoD, 2, func(v uint64) Totals { return Totals{BytesHtoD: int64(v)} }},
		{"DtoH by an eviction", KindBytesDtoH, 4, func(v uint64) Totals { return Totals{BytesDtoH: int64(v)} }},
		{"HtoD speculatively (driver prefetch)", KindBytesHtoD, 3, func(v uint64) Totals { return Totals{BytesHtoD: int64(v)} }},
		{"DtoD by a prefetch is not told apart", KindBytesDtoD, CauseUser, func(v uint64) Totals { return Totals{BytesDtoD: int64(v)} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := v()
			var got Totals
			require.NoError(t, got.Add(Record{Kind: tc.kind, Value: n, Flags: tc.cause}))
			want := tc.want(n)
			want.Records = 1
			assert.Equal(t, want, got)
		})
	}
}

// addTotals adds b's fields to a's (the counts a table's two records make).
func addTotals(a *Totals, b Totals) {
	a.BytesHtoD += b.BytesHtoD
	a.BytesDtoH += b.BytesDtoH
	a.BytesDtoD += b.BytesDtoD
	a.CPUPageFaults += b.CPUPageFaults
	a.GPUPageFaults += b.GPUPageFaults
	a.GPUFaultGroups += b.GPUFaultGroups
	a.Thrashing += b.Thrashing
	a.ThrashingBytes += b.ThrashingBytes
	a.Throttling += b.Throttling
	a.RemoteMaps += b.RemoteMaps
	a.RemoteMapBytes += b.RemoteMapBytes
}

func TestTotalsRefuseOverflowAndBadKinds(t *testing.T) {
	r := rand.For(t)
	start := Totals{BytesHtoD: math.MaxInt64 - r.Int64N(1000), Records: 5}
	cases := []struct {
		name string
		rec  Record
	}{
		{"past MaxInt64", Record{Kind: KindBytesHtoD, Value: 1000 + uint64(r.IntN(1000))}},
		{"value over int64", Record{Kind: KindBytesDtoH, Value: math.MaxUint64 - uint64(r.IntN(1000))}},
		{"kind 0", Record{Kind: 0, Value: 1}},
		{"kind past the last", Record{Kind: kindCount + CounterKind(r.IntN(100)), Value: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := start
			require.ErrorIs(t, got.Add(tc.rec), ErrBadRecord)
			assert.Equal(t, start, got, "a refused record counts nothing")
		})
	}
}

func TestCounterKindNames(t *testing.T) {
	assert.Equal(t, "bytes HtoD", KindBytesHtoD.String())
	assert.Equal(t, "GPU page fault", KindGPUPageFault.String())
	assert.Equal(t, "CounterKind(42)", CounterKind(42).String())
	tot := Totals{BytesHtoD: 3, BytesDtoH: 5, BytesDtoD: 7}
	assert.Equal(t, int64(15), tot.Migrated())
	assert.Contains(t, tot.String(), "migrated HtoD 3 B (0 B prefetched), DtoH 5 B (0 B prefetched), DtoD 7 B")
}
