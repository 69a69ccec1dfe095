package accounting_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// record runs fn on a fresh ledger while recording it, and reads the log back.
func record(t *testing.T, fn func(l *accounting.Ledger)) (*accounting.Ledger, *accounting.Log, int) {
	t.Helper()
	l := accounting.NewLedger("sim:0")
	var buf bytes.Buffer
	rec, err := l.Record(&buf)
	require.NoError(t, err)
	fn(l)
	require.NoError(t, rec.Close())
	size := buf.Len()
	g, err := accounting.ReadLog(&buf)
	require.NoError(t, err)
	return l, g, size
}

// Every kind of event comes back with its size, kind, scope, stream, and
// an id that pairs each free with its allocation.
func TestRecordEvents(t *testing.T) {
	a, b := rand.Int64N(1<<30)+1, rand.Int64N(1<<20)+1
	l, g, _ := record(t, func(l *accounting.Ledger) {
		require.NoError(t, l.Alloc(accounting.Device, 0x1000, a))
		outer := l.Push("fbp")
		inner := l.Push("chunk")
		require.NoError(t, l.Alloc(accounting.Pinned, 0x2000, b))
		l.Free(accounting.Device, 0x1000, a)
		_, err := inner.Pop()
		require.NoError(t, err)
		require.NoError(t, l.SetLimit(accounting.Device, 100))
		require.Error(t, l.Alloc(accounting.Device, 0x3000, 101))
		l.Free(accounting.Device, 0x9000, 512) // allocated before the recording
		_, err = outer.Pop()
		require.NoError(t, err)
		// a pool: a segment from the device, two blocks cut from it on two streams
		require.NoError(t, l.SetLimit(accounting.Device, 0))
		require.NoError(t, l.Alloc(accounting.Device, 0x4000, 2<<20))
		l.NoteSegment(accounting.Device, 0x4000)
		l.NoteBlockAlloc(accounting.Device, 0x4000, 1000, 0xbeef)
		l.NoteBlockAlloc(accounting.Device, 0x4400, 3000, 0xcafe)
		l.NoteBlockFree(accounting.Device, 0x4000, 1024, 0xbeef)
		l.NoteBlockFree(accounting.Device, 0x4400, 3072, 0)
		l.Free(accounting.Device, 0x4000, 2<<20)
	})
	require.Equal(t, "sim:0", g.Name)
	require.Equal(t, accounting.LogVersion, g.Version)
	require.Len(t, g.Scopes, 2)
	assert.Equal(t, "fbp/chunk", g.ScopeName(2))
	assert.Equal(t, "fbp", g.ScopeName(1))
	assert.Equal(t, 2, g.Streams)

	type ev struct {
		Op             accounting.Op
		Kind           accounting.Kind
		Bytes          int64
		ID             int
		Scope          string
		Stream         int
		Block, Segment bool
	}
	want := []ev{
		{accounting.OpAlloc, accounting.Device, a, 1, "", 0, false, false},
		{accounting.OpAlloc, accounting.Pinned, b, 2, "fbp/chunk", 0, false, false},
		{accounting.OpFree, accounting.Device, a, 1, "fbp/chunk", 0, false, false},
		{accounting.OpFailed, accounting.Device, 101, 0, "fbp", 0, false, false},
		{accounting.OpFree, accounting.Device, 512, 0, "fbp", 0, false, false},
		{accounting.OpAlloc, accounting.Device, 2 << 20, 3, "", 0, false, true},
		{accounting.OpAlloc, accounting.Device, 1000, 4, "", 1, true, false},
		{accounting.OpAlloc, accounting.Device, 3000, 5, "", 2, true, false},
		{accounting.OpFree, accounting.Device, 1000, 4, "", 1, true, false},
		{accounting.OpFree, accounting.Device, 3000, 5, "", 0, true, false},
		{accounting.OpFree, accounting.Device, 2 << 20, 3, "", 0, false, true},
	}
	var got []ev
	for i, e := range g.Events {
		got = append(got, ev{e.Op, e.Kind, e.Bytes, e.ID, g.ScopeName(e.Scope), e.Stream, e.Block, e.Segment})
		if i > 0 {
			assert.GreaterOrEqual(t, e.At, g.Events[i-1].At, "times never go back")
		}
	}
	assert.Equal(t, want, got)
	assert.Equal(t, l.Snapshot().Kinds[accounting.Device].Peak, g.Peak(accounting.Device), "the log's peak is the ledger's")
}

// A random run: the log's peak is the ledger's, every free pairs with the
// allocation at its address, and an event takes a few bytes.
func TestRecordRandomRun(t *testing.T) {
	type live struct {
		addr uintptr
		n    int64
		id   int
	}
	var order []int64 // sizes of the allocations in order
	l, g, size := record(t, func(l *accounting.Ledger) {
		var held []live
		next := uintptr(0x10000)
		for range 2000 {
			if len(held) > 0 && rand.IntN(2) == 0 {
				i := rand.IntN(len(held))
				l.Free(accounting.Device, held[i].addr, held[i].n)
				held = append(held[:i], held[i+1:]...)
				continue
			}
			n := (rand.Int64N(64<<20) + 1 + 255) &^ 255
			require.NoError(t, l.Alloc(accounting.Device, next, n))
			held = append(held, live{next, n, len(order) + 1})
			order = append(order, n)
			next += uintptr(n)
		}
		for _, h := range held {
			l.Free(accounting.Device, h.addr, h.n)
		}
	})
	snap := l.Snapshot().Kinds[accounting.Device]
	assert.Equal(t, snap.Peak, g.Peak(accounting.Device))
	assert.Equal(t, int(snap.Allocs+snap.Frees), len(g.Events))
	freed := make(map[int]bool)
	for _, e := range g.Events {
		require.Positive(t, e.ID)
		require.Equal(t, order[e.ID-1], e.Bytes, "event %+v: its allocation's size", e)
		if e.Op == accounting.OpFree {
			require.False(t, freed[e.ID], "allocation %d freed once", e.ID)
			freed[e.ID] = true
		}
	}
	assert.Len(t, freed, len(order), "every allocation freed")
	perEvent := float64(size) / float64(len(g.Events))
	assert.Less(t, perEvent, 10.0, "a few bytes an event, not %.1f", perEvent)
	t.Logf("%d events, %d bytes: %.1f bytes an event", len(g.Events), size, perEvent)
}

// Many goroutines allocate and free at once: every event is in the log,
// whole, and each free pairs with an allocation of its size.
func TestRecordConcurrent(t *testing.T) {
	const goroutines, each = 8, 500
	l, g, _ := record(t, func(l *accounting.Ledger) {
		var wg sync.WaitGroup
		for w := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := l.Push("w") // scopes come and go under the others' feet
				for i := range each {
					addr := uintptr(w<<32 | i<<8)
					n := rand.Int64N(1<<20) + 1
					if err := l.Alloc(accounting.Device, addr, n); err != nil {
						t.Error(err)
						return
					}
					l.NoteBlockAlloc(accounting.Device, addr, n/2, uintptr(w+1))
					l.NoteBlockFree(accounting.Device, addr, n/2, uintptr(w+1))
					l.Free(accounting.Device, addr, n)
				}
				_, _ = s.Pop() // not always the innermost: an error then
			}()
		}
		wg.Wait()
	})
	assert.Equal(t, int64(0), l.Current(accounting.Device))
	require.Len(t, g.Events, goroutines*each*4)
	sizes := make(map[int]int64)
	for _, e := range g.Events {
		require.Positive(t, e.ID, "no free without its allocation")
		if e.Op == accounting.OpAlloc {
			sizes[e.ID] = e.Bytes
		} else {
			require.Equal(t, sizes[e.ID], e.Bytes)
		}
	}
	assert.Equal(t, goroutines, g.Streams)
}

// Close flushes; events after it are not written; a second recording
// waits for the first to close; a failing writer stops the recording,
// not the ledger.
func TestRecordLifetime(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	var buf bytes.Buffer
	rec, err := l.Record(&buf)
	require.NoError(t, err)
	assert.Same(t, rec, l.Recording())
	_, err = l.Record(&bytes.Buffer{})
	require.ErrorIs(t, err, accounting.ErrRecording)
	require.NoError(t, l.Alloc(accounting.Device, 0x100, 256))
	assert.Zero(t, buf.Len(), "buffered until Close")
	assert.Equal(t, int64(1), rec.Events())
	require.NoError(t, rec.Close())
	assert.Equal(t, int64(buf.Len()), rec.Bytes())
	assert.Nil(t, l.Recording())
	l.Free(accounting.Device, 0x100, 256) // after Close: not recorded
	require.NoError(t, rec.Close(), "Close twice")
	g, err := accounting.ReadLog(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Len(t, g.Events, 1)

	werr := errors.New("disk full")
	rec, err = l.Record(failWriter{werr})
	require.NoError(t, err, "a new recording once the first closed")
	for i := range 20000 { // past the buffer
		require.NoError(t, l.Alloc(accounting.Device, uintptr(i+1)<<8, 256))
	}
	require.ErrorIs(t, rec.Close(), werr)
	assert.Equal(t, int64(20000*256), l.Current(accounting.Device), "the ledger counted on")

	var nl *accounting.Ledger
	_, err = nl.Record(&buf)
	require.ErrorIs(t, err, accounting.ErrNil)
	_, err = l.Record(nil)
	require.ErrorIs(t, err, accounting.ErrNil)
	var nr *accounting.Recording
	require.ErrorIs(t, nr.Close(), accounting.ErrNil)
	assert.Zero(t, nr.Events())
	nl.NoteBlockAlloc(accounting.Device, 1, 1, 0) // nothing happens
	nl.NoteBlockFree(accounting.Device, 1, 1, 0)
	nl.NoteSegment(accounting.Device, 1)
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// WriteTo writes what ReadLog reads back.
func TestLogWriteToRoundTrip(t *testing.T) {
	_, g, size := record(t, func(l *accounting.Ledger) {
		s := l.Push("a")
		for i := range 100 {
			n := rand.Int64N(1<<24) + 1
			require.NoError(t, l.Alloc(accounting.Device, uintptr(i+1)<<30, n))
			if i%3 == 0 {
				l.NoteSegment(accounting.Device, uintptr(i+1)<<30)
				l.NoteBlockAlloc(accounting.Device, uintptr(i+1)<<30, n/3, uintptr(i%5))
			}
		}
		_, _ = s.Pop()
	})
	var buf bytes.Buffer
	n, err := g.WriteTo(&buf)
	require.NoError(t, err)
	assert.Equal(t, int64(buf.Len()), n)
	assert.Equal(t, size, buf.Len(), "the same bytes as the recording")
	g2, err := accounting.ReadLog(&buf)
	require.NoError(t, err)
	assert.Equal(t, g.Events, g2.Events)
	assert.Equal(t, g.Scopes, g2.Scopes)
	assert.True(t, g.Start.Equal(g2.Start))

	bad := *g
	bad.Events = append([]accounting.LogEvent{{Op: accounting.OpFree, ID: 7}}, g.Events...)
	_, err = bad.WriteTo(&bytes.Buffer{})
	require.ErrorIs(t, err, accounting.ErrBadLog)
}

// Bad input gives an error that says what is wrong, never a panic.
func TestReadLogBadInput(t *testing.T) {
	head := []byte("CUALLOG\x01\x05sim:0\x00")
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "header"},
		{"another file", []byte("PNG\x89........"), "header"},
		{"later version", []byte("CUALLOG\x03"), "version 3"},
		{"truncated escaped kind", []byte("CUALLOG\x02\x05sim:0\x00\x39"), "memory kind: unexpected EOF"},
		{"escaped kind past the last", []byte("CUALLOG\x02\x05sim:0\x00\x39\x63"), "memory kind 99"},
		{"truncated name", []byte("CUALLOG\x01\x09sim"), "ledger name"},
		{"unknown record", append(head, 0x07), "unknown record type 7"},
		{"truncated alloc", append(head, 0x01, 5), "byte 17: size: unexpected EOF"},
		{"no start time", []byte("CUALLOG\x01\x05sim:0"), "byte 14: start time"},
		{"truncated start time", []byte("CUALLOG\x01\x05sim:0\x80"), "start time"},
		{"a scope with a kind", append(head, 0x0c, 0, 1, 'a'), "flags on a scope record"},
		{"time past int64", append(head, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 9, 0, 0x01, 1, 9, 0), "byte 29: time past"},
		{"free past the allocations", append(head, 0x01, 0, 9, 0, 0x02, 0, 2, 0), "past the 1 allocations"},
		{"double free", append(head, 0x01, 0, 9, 0, 0x02, 0, 1, 0, 0x02, 0, 1, 0), "freed twice"},
		{"free as a block", append(head, 0x01, 0, 9, 0, 0x82, 0, 1, 0), "freed as"},
		{"undefined scope", append(head, 0x01, 0, 9, 3), "scope 3 of 0"},
		{"scope parent after it", append(head, 0x04, 2, 1, 'a'), "scope 1's parent 2"},
		{"stream skips", append(head, 0x41, 0, 9, 0, 3), "stream 3 before stream 1"},
		{"segment of nothing", append(head, 0x05, 1), "past the 0"},
		{"segment twice", append(head, 0x01, 0, 9, 0, 0x05, 1, 0x05, 1), "twice"},
		{"failed block", append(head, 0x83, 0, 9, 0), "block"},
		{"size past int64", append(head, 0x01, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0), "too large"},
		{"huge name", []byte("CUALLOG\x01\xff\xff\xff\xff\x0f"), "longer than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := accounting.ReadLog(bytes.NewReader(c.in))
			require.ErrorIs(t, err, accounting.ErrBadLog, "%q", c.in)
			assert.Nil(t, g)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := accounting.ReadLog(nil)
	require.ErrorIs(t, err, accounting.ErrNil)
	g, err := accounting.ReadLog(bytes.NewReader(head))
	require.NoError(t, err, "a log with no events")
	assert.Empty(t, g.Events)
}

// Closing while other goroutines allocate leaves a log of whole records
// that reads, and the ledger counts on.
func TestRecordCloseWhileRecording(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	var buf bytes.Buffer
	rec, err := l.Record(&buf)
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				addr := uintptr(w<<32 | (i%64)<<8)
				n := rand.Int64N(4096) + 1
				if err := l.Alloc(accounting.Device, addr, n); err != nil {
					t.Error(err)
					return
				}
				l.Free(accounting.Device, addr, n)
			}
		}()
	}
	for rec.Events() < 1000 {
		runtime.Gosched()
	}
	require.NoError(t, rec.Close())
	n := buf.Len()
	close(stop)
	wg.Wait()
	assert.Equal(t, n, buf.Len(), "nothing written after Close")
	assert.Zero(t, l.Current(accounting.Device))
	g, err := accounting.ReadLog(&buf)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(g.Events), 1000)
}

// Frees of allocations made before the recording (no id) take the count
// below zero; past int64 it saturates instead of wrapping round to a
// positive count: after two frees of 8 EiB less a byte, an allocation of
// n bytes is still 16 EiB below the start (peak 0), not n + 2 bytes.
func TestLogPeakUnpairedFreesSaturate(t *testing.T) {
	n := rand.Int64N(1000) + 1
	g := &accounting.Log{Events: []accounting.LogEvent{
		{Op: accounting.OpFree, Bytes: 1<<63 - 1},
		{Op: accounting.OpFree, Bytes: 1<<63 - 1},
		{Op: accounting.OpFree, Bytes: 1<<63 - 1},
		{Op: accounting.OpAlloc, ID: 1, Bytes: n},
	}}
	var buf bytes.Buffer
	_, err := g.WriteTo(&buf)
	require.NoError(t, err)
	read, err := accounting.ReadLog(&buf)
	require.NoError(t, err)
	for _, k := range []int{2, 3} {
		h := &accounting.Log{Events: append(append([]accounting.LogEvent{}, read.Events[:k]...), read.Events[3])}
		assert.Zero(t, h.Peak(accounting.Device), "%d frees of 8 EiB before an allocation of %d bytes", k, n)
	}
}

// A reader that fails (a directory opened as the log) is that failure,
// not "not a valid allocation log".
func TestReadLogReaderFails(t *testing.T) {
	f, err := os.Open(t.TempDir())
	require.NoError(t, err)
	defer f.Close()
	_, err = accounting.ReadLog(f)
	require.Error(t, err)
	assert.NotErrorIs(t, err, accounting.ErrBadLog)
	assert.Contains(t, err.Error(), "is a directory")
}

// WriteTo never writes a log that ReadLog refuses: a log cut from a longer
// one, whose first stream is the third, is written with its streams
// numbered again from 1 (it was written as it was, and ReadLog refused
// it); a second free of an allocation, or a free as another kind or as a
// block, is WriteTo's error.
func TestLogWriteToEditedLogs(t *testing.T) {
	n := 1 + rand.Int64N(1<<20)
	cut := &accounting.Log{Name: "cut", Streams: 4, Events: []accounting.LogEvent{
		{Op: accounting.OpAlloc, ID: 1, Bytes: n, Stream: 3, Block: true},
		{Op: accounting.OpAlloc, ID: 2, Bytes: n + 1, Stream: 4},
		{Op: accounting.OpFree, ID: 1, Bytes: n, Stream: 3, Block: true},
		{Op: accounting.OpFree, ID: 2, Bytes: n + 1, Stream: 3},
	}}
	var buf bytes.Buffer
	_, err := cut.WriteTo(&buf)
	require.NoError(t, err)
	g, err := accounting.ReadLog(&buf)
	require.NoError(t, err, "what WriteTo wrote reads back")
	assert.Equal(t, 2, g.Streams)
	assert.Equal(t, []int{1, 2, 1, 1}, []int{g.Events[0].Stream, g.Events[1].Stream, g.Events[2].Stream, g.Events[3].Stream},
		"streams numbered in the order of first use")
	assert.Equal(t, []int64{n, n + 1, n, n + 1}, []int64{g.Events[0].Bytes, g.Events[1].Bytes, g.Events[2].Bytes, g.Events[3].Bytes})

	// Frees of allocations made before the recording (id 0), of any kind
	// and as blocks or not, write back as they read.
	var before []accounting.LogEvent
	for k := range accounting.NumKinds {
		before = append(before, accounting.LogEvent{Op: accounting.OpFree, Kind: k, Bytes: n + int64(k)},
			accounting.LogEvent{Op: accounting.OpFree, Kind: k, Bytes: n, Block: true})
	}
	buf.Reset()
	_, err = (&accounting.Log{Name: "before", Events: before}).WriteTo(&buf)
	require.NoError(t, err)
	g, err = accounting.ReadLog(&buf)
	require.NoError(t, err)
	assert.Equal(t, before, g.Events)

	alloc := accounting.LogEvent{Op: accounting.OpAlloc, ID: 1, Bytes: n}
	free := accounting.LogEvent{Op: accounting.OpFree, ID: 1, Bytes: n}
	pinnedFree, blockFree := free, free
	pinnedFree.Kind, blockFree.Block = accounting.Pinned, true
	for name, events := range map[string][]accounting.LogEvent{
		"freed twice":        {alloc, free, free},
		"freed as pinned":    {alloc, pinnedFree},
		"freed as a block":   {alloc, blockFree},
		"free of a later":    {free, alloc},
		"id out of order":    {{Op: accounting.OpAlloc, ID: 2, Bytes: n}},
		"a block segment":    {{Op: accounting.OpAlloc, ID: 1, Bytes: n, Block: true, Segment: true}},
		"negative size":      {{Op: accounting.OpAlloc, ID: 1, Bytes: -n}},
		"negative stream":    {{Op: accounting.OpAlloc, ID: 1, Bytes: n, Stream: -1}},
		"time goes back":     {{Op: accounting.OpAlloc, ID: 1, Bytes: n, At: 5}, {Op: accounting.OpFree, ID: 1, Bytes: n, At: 4}},
		"scope not in it":    {{Op: accounting.OpAlloc, ID: 1, Bytes: n, Scope: 1}},
		"failed as a block":  {{Op: accounting.OpFailed, Bytes: n, Block: true}},
		"kind past the last": {{Op: accounting.OpAlloc, ID: 1, Bytes: n, Kind: accounting.NumKinds}},
		"stream past int32":  {{Op: accounting.OpAlloc, ID: 1, Bytes: n, Stream: math.MaxInt32 + 1}},
	} {
		_, err := (&accounting.Log{Events: events}).WriteTo(io.Discard)
		assert.ErrorIs(t, err, accounting.ErrBadLog, name)
	}
	// The edges of what a log holds write and read back: the last kind, an
	// allocation of 0 bytes, the last stream number an int32 holds.
	edges := &accounting.Log{Name: "edges", Streams: math.MaxInt32, Events: []accounting.LogEvent{
		{Op: accounting.OpAlloc, ID: 1, Kind: accounting.NumKinds - 1, Bytes: n, Stream: math.MaxInt32},
		{Op: accounting.OpAlloc, ID: 2, Bytes: 0, Stream: math.MaxInt32},
		{Op: accounting.OpFree, ID: 2, Bytes: 0, Stream: math.MaxInt32},
	}}
	buf.Reset()
	_, err = edges.WriteTo(&buf)
	require.NoError(t, err, "the edges are a valid log")
	g, err = accounting.ReadLog(&buf)
	require.NoError(t, err)
	require.Len(t, g.Events, 3)
	assert.Equal(t, accounting.NumKinds-1, g.Events[0].Kind)
	assert.Equal(t, int64(0), g.Events[1].Bytes)
	badScope := &accounting.Log{Scopes: []accounting.LogScope{{Name: "a"}, {Name: "b", Parent: 3}}}
	_, err = badScope.WriteTo(io.Discard)
	assert.ErrorIs(t, err, accounting.ErrBadLog)
	assert.ErrorContains(t, err, "scope 2's parent 3")

	// A log longer than WriteTo's 4 KiB buffer, to a writer that fails: its error.
	long := &accounting.Log{Name: "long"}
	for i := range 2000 {
		long.Events = append(long.Events, accounting.LogEvent{Op: accounting.OpAlloc, ID: i + 1, Bytes: n})
	}
	werr := errors.New("disk full")
	_, err = long.WriteTo(failWriter{werr})
	assert.ErrorIs(t, err, werr)
	buf.Reset()
	_, err = long.WriteTo(&buf)
	require.NoError(t, err)
	g, err = accounting.ReadLog(&buf)
	require.NoError(t, err)
	assert.Equal(t, long.Events, g.Events, "a log past the buffer writes back whole")
	_, err = (&accounting.Log{Events: []accounting.LogEvent{{Op: accounting.OpAlloc, ID: 2, Bytes: n}}}).WriteTo(io.Discard)
	assert.ErrorContains(t, err, "allocation id 2; the log's allocation 1")
}

// ReadLog takes every log the format allows up to its limits: a name of
// the longest length it reads (64 KiB), a segment of any memory kind, and
// events up to the last nanosecond a time.Duration holds.
func TestReadLogAtItsLimits(t *testing.T) {
	event := func(tag byte, dt uint64, rest ...byte) []byte {
		return append(binary.AppendUvarint([]byte{tag}, dt), rest...)
	}
	name := strings.Repeat(string(rune('a'+rand.IntN(26))), 1<<16)
	// a version 1 log, whose tag byte holds the kinds it knew: the first 8
	// (a later kind is written past the tag, TestLogKindsPastTheTagBits)
	kind := accounting.Kind(rand.IntN(min(int(accounting.NumKinds), 8)))
	head := append(binary.AppendUvarint([]byte("CUALLOG\x01"), 1<<16), name...)
	head = binary.AppendVarint(head, time.Now().UnixNano())
	var in []byte
	in = append(in, head...)
	in = append(in, event(0x01|byte(kind)<<3, 1, 9, 0)...)               // an allocation of 9 bytes
	in = append(in, 0x05|byte(kind)<<3, 1)                               // it is a segment
	in = append(in, event(0x02|byte(kind)<<3, math.MaxInt64-1, 1, 0)...) // freed at the last nanosecond
	g, err := accounting.ReadLog(bytes.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, name, g.Name)
	require.Len(t, g.Events, 2)
	assert.True(t, g.Events[0].Segment, "a segment of %v", kind)
	assert.Equal(t, kind, g.Events[0].Kind)
	assert.Equal(t, time.Duration(math.MaxInt64), g.Events[1].At)
	assert.Equal(t, 1, g.Events[1].ID)

	// A ledger with a name that long records a log that reads back.
	l := accounting.NewLedger(name)
	var buf bytes.Buffer
	rec, err := l.Record(&buf)
	require.NoError(t, err)
	n := rand.Int64N(1<<20) + 1
	require.NoError(t, l.Alloc(accounting.Device, 0x1000, n))
	l.Free(accounting.Device, 0x1000, n)
	require.NoError(t, rec.Close())
	g, err = accounting.ReadLog(&buf)
	require.NoError(t, err)
	assert.Equal(t, name, g.Name)
	assert.Len(t, g.Events, 2)
}

// Kinds from IPC on do not fit in a tag's three kind bits: version 2
// writes them in a byte after the tag, and still reads version 1, whose
// kind 7 is IPC.
func TestLogKindsPastTheTagBits(t *testing.T) {
	n := rand.Int64N(1<<30) + 1
	_, g, _ := record(t, func(l *accounting.Ledger) {
		for k := range accounting.NumKinds {
			require.NoError(t, l.Alloc(k, 0x1000*uintptr(k+1), n+int64(k)))
		}
		l.NoteBlockAlloc(accounting.StreamOrdered, 0x90000, n, 0xbeef)
		for k := range accounting.NumKinds {
			l.Free(k, 0x1000*uintptr(k+1), n+int64(k))
		}
	})
	require.Len(t, g.Events, 2*int(accounting.NumKinds)+1)
	for k := range accounting.NumKinds {
		assert.Equal(t, k, g.Events[k].Kind)
		assert.Equal(t, n+int64(k), g.Events[k].Bytes)
		assert.Equal(t, k, g.Events[int(accounting.NumKinds)+1+int(k)].Kind)
	}
	assert.Equal(t, accounting.StreamOrdered, g.Events[accounting.NumKinds].Kind)
	assert.True(t, g.Events[accounting.NumKinds].Block)

	v1 := []byte("CUALLOG\x01\x05sim:0\x00\x39\x00\x05\x00") // alloc, kind 7, dt 0, 5 bytes, scope 0
	g, err := accounting.ReadLog(bytes.NewReader(v1))
	require.NoError(t, err)
	assert.Equal(t, 1, g.Version)
	require.Len(t, g.Events, 1)
	assert.Equal(t, accounting.IPC, g.Events[0].Kind, "version 1's kind 7 is IPC")
	assert.Equal(t, int64(5), g.Events[0].Bytes)
}
