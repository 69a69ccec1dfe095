package accounting_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// Snapshots taken while goroutines record see every event whole and every
// event's causes: an allocation handed to another goroutine and freed there
// never shows as a free without its allocation, and a copy's count, bytes
// and time always agree.
func TestSnapshotsAreConsistent(t *testing.T) {
	var l accounting.Ledger
	const pairs, workers = 4, 20000
	size := rand.Int64N(1<<20) + 1
	dur := time.Duration(rand.Int64N(1000) + 1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range pairs {
		ch := make(chan uintptr, 64)
		wg.Add(2)
		go func() { // allocates, and copies
			defer wg.Done()
			defer close(ch)
			for i := range workers {
				if err := l.Alloc(accounting.Device, uintptr(i), size); err != nil {
					t.Error(err)
					return
				}
				l.RecordCopy(accounting.HtoD, accounting.PathPinned, size, dur)
				ch <- uintptr(i)
			}
		}()
		go func() { // frees what the other allocated
			defer wg.Done()
			for addr := range ch {
				l.Free(accounting.Device, addr, size)
			}
		}()
	}
	snaps := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			s := l.Snapshot()
			snaps++
			d := s.Kinds[accounting.Device]
			c := s.Copies[accounting.HtoD][accounting.PathPinned]
			if !assert.LessOrEqual(t, d.Frees, d.Allocs, "a free is never seen without its allocation") ||
				!assert.Equal(t, d.Allocated-d.Freed, d.Current, "current is allocated minus freed") ||
				!assert.Equal(t, d.Allocs*size, d.Allocated, "allocations and bytes together") ||
				!assert.Equal(t, d.Frees*size, d.Freed, "frees and bytes together") ||
				!assert.GreaterOrEqual(t, d.Peak, d.Current) ||
				!assert.Equal(t, c.Count*size, c.Bytes, "a copy's count and bytes together") ||
				!assert.InDelta(t, float64(c.Count)*dur.Seconds(), c.Seconds, 1e-9, "a copy's count and time together") {
				return
			}
			runtime.Gosched()
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-done
	s := l.Snapshot().Kinds[accounting.Device]
	assert.Equal(t, int64(pairs*workers), s.Allocs)
	assert.Equal(t, s.Allocs, s.Frees)
	assert.Zero(t, s.Current)
	t.Logf("%d consistent snapshots while recording", snaps)
}

// A limit holds exactly under contention: the bytes in use never pass it,
// and every refusal says that the request did not fit at that instant.
func TestLimitIsExactUnderContention(t *testing.T) {
	var l accounting.Ledger
	chunk := rand.Int64N(4096) + 1
	const slots = 5
	require.NoError(t, l.SetLimit(accounting.Pinned, slots*chunk))
	var held, most atomic.Int64
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) * slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				err := l.Reserve(accounting.Pinned, chunk)
				if err != nil {
					var oom *accounting.OutOfMemoryError
					if !assert.ErrorAs(t, err, &oom) ||
						!assert.Greater(t, oom.InUse+chunk, oom.Limit, "refused although it fit") {
						return
					}
					refused.Add(1)
					continue
				}
				n := held.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				assert.LessOrEqual(t, l.Current(accounting.Pinned), slots*chunk, "the limit was passed")
				held.Add(-1)
				l.Commit(accounting.Pinned, 1, chunk)
				l.Free(accounting.Pinned, 1, chunk)
			}
		}()
	}
	wg.Wait()
	s := l.Snapshot().Kinds[accounting.Pinned]
	assert.LessOrEqual(t, most.Load(), int64(slots), "more reservations held at once than the limit allows")
	assert.LessOrEqual(t, s.Peak, slots*chunk)
	assert.Zero(t, s.Current)
	assert.Equal(t, refused.Load(), s.Failed, "every refusal is counted")
	t.Logf("%d allocations, %d refused by the limit, at most %d held at once", s.Allocs, refused.Load(), most.Load())
}

// No event is lost between a scope and its parent while scopes are pushed
// and popped under concurrent recording.
func TestScopesLoseNoEventUnderConcurrency(t *testing.T) {
	var l accounting.Ledger
	outer := l.Push("outer")
	const workers, events = 4, 20000
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range events {
				l.RecordCopy(accounting.DtoD, accounting.PathD2D, 3, 0)
			}
		}()
	}
	var inner int64
	stop := make(chan struct{})
	popped := make(chan struct{})
	go func() {
		defer close(popped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap, err := l.Push("inner").Pop()
			if !assert.NoError(t, err) {
				return
			}
			inner += snap.CopyTotal(accounting.DtoD).Count
		}
	}()
	wg.Wait()
	close(stop)
	<-popped
	snap, err := outer.Pop()
	require.NoError(t, err)
	got := snap.CopyTotal(accounting.DtoD)
	assert.Equal(t, int64(workers*events), got.Count, "the outer scope counts every event, those of inner scopes too")
	assert.Equal(t, 3*got.Count, got.Bytes)
	assert.LessOrEqual(t, inner, got.Count)
	t.Logf("%d of %d events were counted in inner scopes first", inner, got.Count)
}

// Recording allocates nothing, scopes and limits included.
func TestRecordingAllocatesNothing(t *testing.T) {
	var l accounting.Ledger
	require.NoError(t, l.SetLimit(accounting.Device, 1<<40))
	l.RecordMemset(1, 0) // the first event makes the shards
	s := l.Push("scope")
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"alloc and free", func() {
			_ = l.Alloc(accounting.Device, 1, 4096)
			l.Free(accounting.Device, 1, 4096)
		}},
		{"reserve, commit and free", func() {
			_ = l.Reserve(accounting.Device, 4096)
			l.Commit(accounting.Device, 1, 4096)
			l.Free(accounting.Device, 1, 4096)
		}},
		{"copies and memsets", func() {
			l.RecordCopy(accounting.HtoD, accounting.PathStaged, 10, time.Microsecond)
			l.RecordCopyTime(accounting.HtoD, accounting.PathStaged, time.Microsecond)
			l.RecordMemset(10, time.Microsecond)
		}},
		{"cached", func() { l.AddCached(accounting.Device, 256) }},
	} {
		assert.Zero(t, testing.AllocsPerRun(1000, tc.f), "%s allocates", tc.name)
	}
	_, err := s.Pop()
	require.NoError(t, err)
}

// Many ledgers, each used from many goroutines and then dropped, keep their
// counts apart (shards are per ledger, not global).
func TestLedgersAreIndependent(t *testing.T) {
	ledgers := make([]accounting.Ledger, 3)
	var wg sync.WaitGroup
	for i := range ledgers {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 1000 * (i + 1) {
					ledgers[i].RecordMemset(int64(i+1), 0)
				}
			}()
		}
	}
	wg.Wait()
	for i := range ledgers {
		m := ledgers[i].Snapshot().Memsets
		assert.Equal(t, int64(4000*(i+1)), m.Count, "ledger %d", i)
		assert.Equal(t, int64(4000*(i+1)*(i+1)), m.Bytes, "ledger %d", i)
	}
}

// A program may raise GOMAXPROCS after a ledger (and a scope) made their
// shards, one per P then: events recorded on the Ps added since go to the
// overflow shard, and the counts, the scope's and the ledger's, still add
// up exactly, with snapshots taken all along. The workers record for a
// while rather than a number of times, so that every P runs some of them.
func TestGOMAXPROCSRaisedUnderALiveLedger(t *testing.T) {
	was := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	var l accounting.Ledger
	first := rand.Int64N(1<<20) + 1
	require.NoError(t, l.Alloc(accounting.Device, 1, first), "the ledger makes its shards for one P")
	scope := l.Push("raised")

	procs := 2 + rand.IntN(3)
	runtime.GOMAXPROCS(procs)
	workers := 4 * procs
	sizes, rounds := make([]int64, workers), make([]int64, workers)
	for w := range sizes {
		sizes[w] = rand.Int64N(1<<16) + 1
	}
	var stop atomic.Bool
	snapshots := make(chan int)
	go func() { // snapshots freeze the ledger while the workers record
		n := 0
		for !stop.Load() {
			s := l.Snapshot().Kinds[accounting.Device]
			if s.Allocs < s.Frees {
				t.Errorf("a snapshot saw %d frees of %d allocations", s.Frees, s.Allocs)
			}
			n++
			runtime.Gosched()
		}
		snapshots <- n
	}()
	start := make(chan struct{})
	end := time.Now().Add(50 * time.Millisecond)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := 0; i < 10 || time.Now().Before(end); i++ {
				addr := uintptr(2 + w<<32 + i)
				if err := l.Alloc(accounting.Device, addr, sizes[w]); err != nil {
					t.Error(err)
					return
				}
				l.RecordCopy(accounting.HtoD, accounting.PathPinned, sizes[w], time.Duration(sizes[w]))
				l.Free(accounting.Device, addr, sizes[w])
				rounds[w]++
				if i%16 == 0 {
					runtime.Gosched() // move between Ps
				}
			}
		})
	}
	close(start)
	wg.Wait()
	stop.Store(true)
	assert.Positive(t, <-snapshots)

	var events, total int64
	for w, n := range sizes {
		events += rounds[w]
		total += rounds[w] * n
	}
	in, err := scope.Pop()
	require.NoError(t, err)
	all := l.Snapshot()
	for _, s := range []struct {
		name  string
		snap  accounting.Snapshot
		extra int64 // the allocation before the scope
	}{{"the scope", in, 0}, {"the ledger", all, 1}} {
		d := s.snap.Kinds[accounting.Device]
		assert.Equal(t, events+s.extra, d.Allocs, "%s: allocations", s.name)
		assert.Equal(t, events, d.Frees, "%s: frees", s.name)
		assert.Equal(t, total+s.extra*first, d.Allocated, "%s: bytes allocated", s.name)
		assert.Equal(t, total, d.Freed, "%s: bytes freed", s.name)
		c := s.snap.Copies[accounting.HtoD][accounting.PathPinned]
		assert.Equal(t, events, c.Count, "%s: copies", s.name)
		assert.Equal(t, total, c.Bytes, "%s: bytes copied", s.name)
	}
	assert.Equal(t, first, all.Kinds[accounting.Device].Current, "only the first allocation is live")
}
