package accounting_test

import (
	"bytes"
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

func TestZeroLedgerCounts(t *testing.T) {
	var l accounting.Ledger // the zero value is ready to use
	n := rand.Int64N(1<<20) + 1
	require.NoError(t, l.Alloc(accounting.Device, 0x1000, n))
	require.NoError(t, l.Alloc(accounting.Device, 0x2000, 2*n))
	l.Free(accounting.Device, 0x1000, n)
	l.RecordCopy(accounting.HtoD, accounting.PathPinned, 3*n, time.Millisecond)
	l.RecordMemset(n, time.Microsecond)

	s := l.Snapshot()
	d := s.Kinds[accounting.Device]
	assert.Equal(t, 2*n, d.Current, "current is allocated minus freed")
	assert.Equal(t, 3*n, d.Peak, "peak is the highest current")
	assert.Equal(t, int64(2), d.Allocs)
	assert.Equal(t, int64(1), d.Frees)
	assert.Equal(t, 3*n, d.Allocated)
	assert.Equal(t, n, d.Freed)
	c := s.Copies[accounting.HtoD][accounting.PathPinned]
	assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: 3 * n, Seconds: 0.001}, c)
	assert.Equal(t, int64(1), s.Memsets.Count)
	assert.Equal(t, s.CopyTotal(accounting.HtoD), s.Copied(), "only HtoD copies were made")
	assert.Equal(t, int64(2), s.Allocations())
	for k := accounting.Pinned; k < accounting.NumKinds; k++ {
		assert.Zero(t, s.Kinds[k], "kind %v saw nothing", k)
	}
}

func TestLimitRefusesWithTypedError(t *testing.T) {
	l := accounting.NewLedger("test")
	l.SetMemInfo(func() (int64, int64, error) { return 123, 456, nil })
	require.NoError(t, l.SetLimit(accounting.Pinned, 1000))
	require.NoError(t, l.Alloc(accounting.Pinned, 1, 600))

	err := l.Alloc(accounting.Pinned, 2, 500)
	require.Error(t, err)
	assert.True(t, errors.Is(err, accounting.ErrOutOfMemory), "errors.Is(err, ErrOutOfMemory)")
	var oom *accounting.OutOfMemoryError
	require.True(t, errors.As(err, &oom))
	assert.Equal(t, accounting.OutOfMemoryError{Kind: accounting.Pinned, Requested: 500, InUse: 600, Limit: 1000,
		DeviceFree: 123, DeviceTotal: 456, ByLimit: true}, *oom)
	assert.Contains(t, err.Error(), "limit is 1000 B")
	assert.Contains(t, err.Error(), "device free 123 B of 456 B")

	s := l.Snapshot().Kinds[accounting.Pinned]
	assert.Equal(t, int64(600), s.Current, "a refused allocation leaves current unchanged")
	assert.Equal(t, int64(1), s.Failed)
	assert.Equal(t, int64(1000), s.Limit)
	assert.Equal(t, int64(0), l.Current(accounting.Device), "limits are per kind")

	require.NoError(t, l.SetLimit(accounting.Pinned, 0))
	assert.NoError(t, l.Alloc(accounting.Pinned, 2, 500), "limit 0 removes the limit")
	assert.Error(t, l.SetLimit(accounting.NumKinds, 1))
	assert.Error(t, l.SetLimit(accounting.Device, -1))
}

func TestReserveCancel(t *testing.T) {
	var l accounting.Ledger
	require.NoError(t, l.Reserve(accounting.Device, 4096))
	assert.Equal(t, int64(4096), l.Current(accounting.Device), "a reservation counts as in use")
	l.Cancel(accounting.Device, 4096)
	s := l.Snapshot().Kinds[accounting.Device]
	assert.Equal(t, accounting.KindStats{Failed: 1}, s, "a cancelled reservation is a failed allocation")
	assert.Error(t, l.Reserve(accounting.Device, -1))
	assert.Error(t, l.Reserve(accounting.NumKinds, 1))
}

func TestOutOfMemoryFromDevice(t *testing.T) {
	var l accounting.Ledger
	e := l.OutOfMemory(accounting.Device, 1<<30, 5, false)
	assert.Equal(t, int64(-1), e.DeviceTotal, "unknown without a MemInfoFunc")
	assert.Equal(t, int64(-1), e.DeviceFree, "unknown without a MemInfoFunc")
	assert.Contains(t, e.Error(), "the device has no room")
	assert.NotContains(t, e.Error(), "device free", "no figures it does not have")
	assert.ErrorIs(t, e, accounting.ErrOutOfMemory)
}

func TestConcurrentRecordingBalances(t *testing.T) {
	var l accounting.Ledger
	const workers, rounds = 16, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				n := int64(1 + (w*rounds+i)%977)
				if err := l.Alloc(accounting.Device, uintptr(i), n); err != nil {
					t.Error(err)
					return
				}
				l.RecordCopy(accounting.DtoD, accounting.PathD2D, n, 0)
				l.Free(accounting.Device, uintptr(i), n)
			}
		}()
	}
	wg.Wait()
	s := l.Snapshot()
	d := s.Kinds[accounting.Device]
	assert.Zero(t, d.Current)
	assert.Equal(t, int64(workers*rounds), d.Allocs)
	assert.Equal(t, d.Allocs, d.Frees)
	assert.Equal(t, d.Allocated, d.Freed)
	assert.Equal(t, d.Allocated, s.Copies[accounting.DtoD][accounting.PathD2D].Bytes)
	assert.LessOrEqual(t, d.Peak, int64(workers*977))
}

func TestInvalidEnumsAreIgnored(t *testing.T) {
	var l accounting.Ledger
	l.Commit(accounting.NumKinds, 1, 1)
	l.Free(accounting.NumKinds, 1, 1)
	l.Cancel(accounting.NumKinds, 1)
	l.RecordFailure(accounting.NumKinds, 1)
	assert.ErrorIs(t, l.Alloc(accounting.NumKinds, 1, 1), accounting.ErrInvalidArgument)
	assert.ErrorIs(t, l.Reserve(accounting.NumKinds, 1), accounting.ErrInvalidArgument)
	assert.Zero(t, l.Snapshot().Allocations())
	l.RecordCopy(accounting.NumDirections, 0, 1, 0)
	l.RecordCopy(0, accounting.NumPaths, 1, 0)
	assert.Equal(t, int64(0), l.Current(accounting.NumKinds))
	assert.Equal(t, int64(0), l.Limit(accounting.NumKinds))
	assert.Zero(t, l.Snapshot().Copied())
	assert.Zero(t, l.Snapshot().CopyTotal(accounting.NumDirections))

	// A recording open: the block notes of no kind are left out of it.
	var log bytes.Buffer
	rec, err := l.Record(&log)
	require.NoError(t, err)
	l.NoteBlockAlloc(accounting.NumKinds, 0x1000, 1, 0)
	l.NoteSegment(accounting.NumKinds, 0x1000)
	l.NoteBlockFree(accounting.NumKinds, 0x1000, 1, 0)
	require.NoError(t, rec.Close())
	g, err := accounting.ReadLog(&log)
	require.NoError(t, err)
	assert.Empty(t, g.Events)
}

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{accounting.Device.String(), "device"},
		{accounting.WriteCombined.String(), "write-combined"},
		{accounting.Host.String(), "host"},
		{accounting.IPC.String(), "ipc"},
		{accounting.StreamOrdered.String(), "stream-ordered"},
		{accounting.VirtualAddress.String(), "virtual-address"},
		{accounting.Physical.String(), "physical"},
		{accounting.NumKinds.String(), "Kind(11)"},
		{accounting.HtoD.String(), "HtoD"},
		{accounting.Peer.String(), "peer"},
		{accounting.Net.String(), "net"},
		{accounting.NumDirections.String(), "Direction(6)"},
		{accounting.PathStaged.String(), "staged"},
		{accounting.PathRegistered.String(), "registered"},
		{accounting.PathMPIDevice.String(), "mpi-device"},
		{accounting.PathMPIStaged.String(), "mpi-staged"},
		{accounting.PathPrefetch.String(), "prefetch"},
		{accounting.PathMigrated.String(), "migrated"},
		{accounting.PathPageable.String(), "pageable"},
		{accounting.NumPaths.String(), "Path(13)"},
		{accounting.OpAlloc.String(), "alloc"},
		{accounting.Op(99).String(), "Op(99)"},
		{accounting.Op(0).String(), "Op(0)"},
		{accounting.OpLaunch.String(), "launch"},
		{(accounting.OpLaunch + 1).String(), "Op(7)"}, // the first past the last
		{accounting.NewLedger("sim:3").Name(), "sim:3"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got)
	}
	for k := accounting.Kind(0); k < accounting.NumKinds; k++ {
		got, err := accounting.ParseKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	for p := accounting.Path(0); p < accounting.NumPaths; p++ {
		got, err := accounting.ParsePath(p.String())
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := accounting.ParseKind("vram")
	assert.Error(t, err)
	_, err = accounting.ParsePath("teleport")
	assert.Error(t, err)
}

// A failure recorded without a reservation (an allocation the device
// refused, larger than all its memory) counts as a failed allocation of
// its kind, changes no bytes in use, and is logged with the level at the
// time.
func TestRecordFailureCounts(t *testing.T) {
	for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.IPC} {
		l := accounting.NewLedger("test")
		l.StartLog(accounting.LogConfig{})
		held := rand.Int64N(1<<20) + 1
		require.NoError(t, l.Alloc(k, 0x1000, held))
		n := rand.Int64N(1<<40) + 1
		l.RecordFailure(k, n)
		s := l.Snapshot().Kinds[k]
		assert.Equal(t, int64(1), s.Failed, "%v", k)
		assert.Equal(t, held, s.Current, "%v: no bytes in use", k)
		assert.Equal(t, int64(1), s.Allocs)
		events, _, err := l.StopLog()
		require.NoError(t, err)
		require.Len(t, events, 2)
		assert.Equal(t, accounting.OpFailed, events[1].Op)
		assert.Equal(t, k, events[1].Kind)
		assert.Equal(t, n, events[1].Bytes)
		assert.Equal(t, held, events[1].Level)
		l.Free(k, 0x1000, held)
	}
}

// A zero-byte allocation (an empty array) is an allocation like any other:
// counted, logged, and never refused by a limit, however full.
func TestZeroByteAllocations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alloc func(l *accounting.Ledger) error
	}{
		{"Alloc", func(l *accounting.Ledger) error { return l.Alloc(accounting.Device, 0x2000, 0) }},
		{"Reserve and Commit", func(l *accounting.Ledger) error {
			if err := l.Reserve(accounting.Device, 0); err != nil {
				return err
			}
			l.Commit(accounting.Device, 0x2000, 0)
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := accounting.NewLedger("test")
			limit := rand.Int64N(1<<20) + 1
			require.NoError(t, l.SetLimit(accounting.Device, limit))
			require.NoError(t, l.Alloc(accounting.Device, 0x1000, limit)) // full
			require.NoError(t, tc.alloc(l), "a zero-byte allocation at the limit")
			s := l.Snapshot().Kinds[accounting.Device]
			assert.Equal(t, int64(2), s.Allocs)
			assert.Equal(t, limit, s.Current)
			assert.Zero(t, s.Failed)
			l.Free(accounting.Device, 0x2000, 0)
			l.Free(accounting.Device, 0x1000, limit)
			assert.Zero(t, l.Current(accounting.Device))
		})
	}
}
