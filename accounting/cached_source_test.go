package accounting_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// Cached sources add to the cached bytes of their kind in snapshots and in
// a scope's Pop, beside AddCached's; remove takes one off (twice is no
// error); a nil ledger, an invalid kind or a nil func register nothing.
func TestCachedSources(t *testing.T) {
	type source struct {
		kind  accounting.Kind
		bytes int64
	}
	for _, tc := range []struct {
		name    string
		sources []source
		added   map[accounting.Kind]int64 // AddCached's
		removed []int                     // sources taken off before the check
	}{
		{"one", []source{{accounting.Device, rand.Int64N(1 << 30)}}, nil, nil},
		{"two of a kind and AddCached", []source{{accounting.Device, rand.Int64N(1 << 30)}, {accounting.Device, rand.Int64N(1 << 20)}},
			map[accounting.Kind]int64{accounting.Device: rand.Int64N(1 << 20)}, nil},
		{"kinds apart", []source{{accounting.Device, rand.Int64N(1 << 30)}, {accounting.Pinned, rand.Int64N(1 << 30)}}, nil, nil},
		{"one removed", []source{{accounting.Device, rand.Int64N(1 << 30)}, {accounting.Device, rand.Int64N(1 << 20)}}, nil, []int{0}},
		{"all removed", []source{{accounting.Mapped, 1 + rand.Int64N(1<<30)}}, map[accounting.Kind]int64{accounting.Mapped: 1 + rand.Int64N(1<<10)}, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := accounting.NewLedger("test")
			values := make([]atomic.Int64, len(tc.sources))
			var removes []func()
			for i, s := range tc.sources {
				values[i].Store(s.bytes)
				removes = append(removes, l.AddCachedSource(s.kind, values[i].Load))
			}
			for k, n := range tc.added {
				l.AddCached(k, n)
			}
			scope := l.Push("scope")
			want := map[accounting.Kind]int64{}
			for k, n := range tc.added {
				want[k] += n
			}
			gone := map[int]bool{}
			for _, i := range tc.removed {
				removes[i]()
				removes[i]() // again: nothing more happens
				gone[i] = true
			}
			for i, s := range tc.sources {
				if !gone[i] {
					want[s.kind] += s.bytes
				}
			}
			snap := l.Snapshot()
			popped, err := scope.Pop()
			require.NoError(t, err)
			for k := range accounting.NumKinds {
				assert.Equal(t, want[k], snap.Kinds[k].Cached, "%v: snapshot", k)
				assert.Equal(t, want[k], popped.Kinds[k].Cached, "%v: scope", k)
			}
			// A source's later value is what the next snapshot sees.
			if len(tc.sources) > 0 && !gone[0] {
				values[0].Add(1000)
				assert.Equal(t, want[tc.sources[0].kind]+1000, l.Snapshot().Kinds[tc.sources[0].kind].Cached)
			}
		})
	}

	var nilLedger *accounting.Ledger
	nilLedger.AddCachedSource(accounting.Device, func() int64 { return 1 })() // no panic, nothing to count
	l := accounting.NewLedger("test")
	l.AddCachedSource(accounting.NumKinds, func() int64 { return 1 })
	l.AddCachedSource(accounting.Device, nil)
	for k := range accounting.NumKinds {
		assert.Zero(t, l.Snapshot().Kinds[k].Cached, "%v", k)
	}
}

// A source that takes a lock which another goroutine holds while it
// records into the same ledger, as package pool's does (its lock is held
// around the device's allocations, which the ledger counts): snapshots and
// recording go on, no deadlock, and the final figures are exact.
func TestCachedSourceTakesARecordersLock(t *testing.T) {
	l := accounting.NewLedger("test")
	var mu sync.Mutex
	var cached int64 // under mu
	remove := l.AddCachedSource(accounting.Device, func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return cached
	})
	defer remove()

	const workers, rounds = 4, 500
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				n := 256 * (1 + rand.Int64N(64))
				addr := uintptr(w<<32 | i<<8 | 1)
				mu.Lock() // the pool's lock, held while the ledger records
				err := l.Alloc(accounting.Device, addr, n)
				cached += n
				mu.Unlock()
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				l.Free(accounting.Device, addr, n)
				cached -= n
				mu.Unlock()
			}
		}()
	}
	go func() {
		defer close(done)
		for {
			snap := l.Snapshot()
			assert.GreaterOrEqual(t, snap.Kinds[accounting.Device].Cached, int64(0))
			s := l.Push("p")
			_, err := s.Pop()
			assert.NoError(t, err)
			if snap.Kinds[accounting.Device].Allocs == workers*rounds && snap.Kinds[accounting.Device].Frees == workers*rounds {
				return
			}
		}
	}()
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		<-done
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("recording and snapshots did not finish: deadlocked over the source's lock")
	}
	snap := l.Snapshot()
	assert.Zero(t, snap.Kinds[accounting.Device].Cached)
	assert.Zero(t, snap.Kinds[accounting.Device].Current)
}

// Sources added and removed while snapshots are taken: under the race
// detector, and each snapshot's figure is a sum of some of the sources.
func TestCachedSourcesConcurrent(t *testing.T) {
	l := accounting.NewLedger("test")
	const adders, each = 4, 200
	var wg sync.WaitGroup
	for range adders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				remove := l.AddCachedSource(accounting.Device, func() int64 { return 256 })
				snap := l.Snapshot()
				c := snap.Kinds[accounting.Device].Cached
				assert.True(t, c >= 256 && c <= 256*adders && c%256 == 0, "cached %d: its own source and at most the others'", c)
				remove()
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, l.Snapshot().Kinds[accounting.Device].Cached)
}

// The order that would deadlock if snapshots asked their sources while
// recording is held up: a goroutine takes the source's lock, a snapshot
// starts and asks the source (waiting for the lock), then the goroutine
// records into the ledger before it lets go of the lock.
func TestCachedSourceAskedBeforeFreezing(t *testing.T) {
	l := accounting.NewLedger("test")
	var mu sync.Mutex
	asked := make(chan struct{}, 1)
	remove := l.AddCachedSource(accounting.Device, func() int64 {
		select {
		case asked <- struct{}{}:
		default:
		}
		mu.Lock()
		defer mu.Unlock()
		return 512
	})
	defer remove()

	mu.Lock()
	snapped := make(chan accounting.Snapshot)
	go func() { snapped <- l.Snapshot() }()
	<-asked
	time.Sleep(10 * time.Millisecond) // the snapshot waits in the source for mu
	recorded := make(chan error)
	go func() {
		err := l.Alloc(accounting.Device, 0x1000, 256)
		mu.Unlock()
		recorded <- err
	}()
	select {
	case err := <-recorded:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the recording under the source's lock waited for the snapshot, which waited for the lock")
	}
	snap := <-snapped
	assert.Equal(t, int64(512), snap.Kinds[accounting.Device].Cached)
	l.Free(accounting.Device, 0x1000, 256)
}
