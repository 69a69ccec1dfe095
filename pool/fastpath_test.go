package pool_test

import (
	"bytes"
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// parkedSize returns a random request that the pool parks when it is freed
// on the default stream: a whole number of 256-byte granules up to 64 KiB.
func parkedSize() int64 { return int64(256 * (1 + rand.IntN(parkMaxBytes/256))) }

// The fast path hands out parked blocks from many goroutines at once with
// random sizes, small and not: no block is handed out twice (each holds a
// pattern of its own until it is freed), Stats stay consistent under the
// lock, and once everything is freed the pool's and the ledger's figures
// agree and Release gives every byte back.
func TestFastPathConcurrent(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	before := led.Current(accounting.Device)
	p := pool.New(dev)
	const goroutines = 8
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type held struct {
				ptr     devarray.Ptr
				pattern []byte
			}
			var live []held
			for range 300 {
				if len(live) > 0 && (len(live) > 6 || rand.IntN(2) == 0) {
					i := rand.IntN(len(live))
					h := live[i]
					got := make([]byte, len(h.pattern))
					if !assert.NoError(t, p.CopyDtoH(got, h.ptr)) || !assert.Equal(t, h.pattern, got, "goroutine %d: a block's bytes changed while it was held", g) {
						return
					}
					if !assert.NoError(t, p.Free(h.ptr)) {
						return
					}
					live = append(live[:i], live[i+1:]...)
					continue
				}
				n := parkedSize()
				switch rand.IntN(8) {
				case 0:
					n = int64(1 + rand.IntN(2<<20)) // small but not parked, or medium
				case 1:
					n = int64(rand.IntN(256)) // 0 to 255 bytes: one granule
				}
				ptr, err := p.Alloc(n)
				if !assert.NoError(t, err) {
					return
				}
				pattern := make([]byte, min(max(n, 1), 4096))
				for i := range pattern {
					pattern[i] = byte(rand.IntN(256))
				}
				if !assert.NoError(t, p.CopyHtoD(ptr, pattern)) {
					return
				}
				live = append(live, held{ptr, pattern})
			}
			for _, h := range live {
				assert.NoError(t, p.Free(h.ptr))
			}
		}()
	}
	wg.Add(1)
	go func() { // Stats and Trim meanwhile: parked blocks merge back while others park
		defer wg.Done()
		for range 50 {
			st := p.Stats()
			assert.Equal(t, int64(st.LiveBlocks), st.Allocs-st.Frees, "live blocks")
			assert.GreaterOrEqual(t, st.Reserved, st.InUse)
			assert.Equal(t, st.Reserved-st.InUse, st.Cached)
			_, err := p.Trim()
			assert.NoError(t, err)
		}
	}()
	wg.Wait()
	st := p.Stats()
	assert.Zero(t, st.InUse)
	assert.Zero(t, st.LiveBlocks)
	assert.Equal(t, st.Allocs, st.Frees)
	assert.Equal(t, st.Allocs, st.FromCache+st.FromDevice)
	assert.Equal(t, st.Reserved, led.Snapshot().Kinds[accounting.Device].Cached, "the ledger's cached bytes")
	require.NoError(t, p.Release())
	assert.Equal(t, before, led.Current(accounting.Device), "Release gave every segment back")
	assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Cached)
}

// A parked block is not allocated: freeing it again, or freeing an address
// inside it, is ErrNotAllocated, while it is parked and after it merges
// back (Stats merges parked blocks), and the failed frees count nothing.
func TestFastPathFreeErrors(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	n := parkedSize()
	ptr, err := p.Alloc(n)
	require.NoError(t, err)
	require.NoError(t, p.Free(ptr)) // parked
	inside := ptr + devarray.Ptr(1+rand.IntN(int(accounting.AllocBytes(n))-1))
	for _, bad := range []devarray.Ptr{ptr, inside} {
		assert.ErrorIs(t, p.Free(bad), pool.ErrNotAllocated, "free %v while parked", bad)
		assert.ErrorIs(t, p.FreeAsync(bad, nil), pool.ErrNotAllocated, "free %v while parked", bad)
	}
	st := p.Stats() // merges ptr back
	assert.Equal(t, int64(1), st.Allocs)
	assert.Equal(t, int64(1), st.Frees)
	assert.Zero(t, st.LiveBlocks)
	for _, bad := range []devarray.Ptr{ptr, inside} {
		assert.ErrorIs(t, p.Free(bad), pool.ErrNotAllocated, "free %v merged", bad)
	}
	assert.Equal(t, st, p.Stats(), "failed frees count nothing")
	again, err := p.Alloc(n)
	require.NoError(t, err)
	require.NoError(t, p.Free(again))
	require.ErrorIs(t, p.Free(again), pool.ErrNotAllocated)
}

// The limit holds on the fast path: a parked block of the right size is
// not handed out past the limit, and with many goroutines allocating
// parked sizes under a limit the peak in use never passes it.
func TestFastPathLimit(t *testing.T) {
	dev := testdev.Open(t)
	t.Run("one goroutine", func(t *testing.T) {
		p := newPool(t, dev)
		size := int64(256 * (2 + rand.IntN(parkMaxBytes/256-1))) // 512 B to 64 KiB
		require.NoError(t, p.SetLimit(3*size))
		var ptrs [3]devarray.Ptr
		for i := range ptrs {
			var err error
			ptrs[i], err = p.Alloc(size)
			require.NoError(t, err)
		}
		require.NoError(t, p.Free(ptrs[0]))
		require.NoError(t, p.Free(ptrs[1])) // two parked blocks of size
		small, err := p.Alloc(1)
		require.NoError(t, err)
		got, err := p.Alloc(size) // size + 256 + size: within the limit
		require.NoError(t, err)
		_, err = p.Alloc(size) // a parked block is there, but 3*size + 256 is past the limit
		var oom *pool.OutOfMemoryError
		require.ErrorAs(t, err, &oom)
		assert.True(t, oom.ByLimit)
		assert.Equal(t, 2*size+256, p.Stats().InUse)
		for _, ptr := range []devarray.Ptr{small, got, ptrs[2]} {
			require.NoError(t, p.Free(ptr))
		}
	})
	t.Run("up to the limit exactly", func(t *testing.T) {
		p := newPool(t, dev)
		size := parkedSize()
		require.NoError(t, p.SetLimit(2*accounting.AllocBytes(size)))
		a, err := p.Alloc(size)
		require.NoError(t, err)
		b, err := p.Alloc(size)
		require.NoError(t, err)
		require.NoError(t, p.Free(b)) // parked
		got, err := p.Alloc(size)     // in use reaches the limit, not past it
		require.NoError(t, err)
		assert.Equal(t, b, got, "the parked block, handed out at the limit")
		assert.Equal(t, 2*accounting.AllocBytes(size), p.Stats().InUse)
		require.NoError(t, p.Free(a))
		require.NoError(t, p.Free(got))
	})
	t.Run("many goroutines", func(t *testing.T) {
		p := newPool(t, dev)
		limit := int64(256 * (64 + rand.IntN(256)))
		require.NoError(t, p.SetLimit(limit))
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var live []devarray.Ptr
				for range 400 {
					if len(live) > 0 && rand.IntN(2) == 0 {
						i := rand.IntN(len(live))
						assert.NoError(t, p.Free(live[i]))
						live = append(live[:i], live[i+1:]...)
						continue
					}
					ptr, err := p.Alloc(int64(256 * (1 + rand.IntN(16))))
					var oom *pool.OutOfMemoryError
					if errors.As(err, &oom) {
						assert.True(t, oom.ByLimit, "only the limit refuses here")
						continue
					}
					if assert.NoError(t, err) {
						live = append(live, ptr)
					}
				}
				for _, ptr := range live {
					assert.NoError(t, p.Free(ptr))
				}
			}()
		}
		wg.Wait()
		st := p.Stats()
		assert.LessOrEqual(t, st.PeakInUse, limit)
		assert.Zero(t, st.InUse)
	})
}

// Release gives back the segments of parked blocks too, while some blocks
// are still handed out (it reports them) and once they are freed.
func TestFastPathReleaseWithParked(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	before := led.Current(accounting.Device)
	p := pool.New(dev)
	var ptrs []devarray.Ptr
	for range 2 + rand.IntN(30) {
		ptr, err := p.Alloc(parkedSize())
		require.NoError(t, err)
		ptrs = append(ptrs, ptr)
	}
	keep := ptrs[0]
	for _, ptr := range ptrs[1:] {
		require.NoError(t, p.Free(ptr)) // parked
	}
	require.ErrorIs(t, p.Release(), pool.ErrInUse)
	assert.Equal(t, 1, p.Stats().LiveBlocks)
	require.NoError(t, p.Free(keep))
	require.NoError(t, p.Release())
	st := p.Stats()
	assert.Zero(t, st.Reserved)
	assert.Zero(t, st.Segments)
	assert.Equal(t, before, led.Current(accounting.Device))
	assert.Zero(t, led.Snapshot().Kinds[accounting.Device].Cached)
}

// A recording sees the fast path's blocks: an allocation served from a
// parked block and its free are recorded like any other.
func TestFastPathRecorded(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	var log bytes.Buffer
	rec, err := dev.Ledger().Record(&log)
	require.NoError(t, err)
	n := int64(1 + rand.IntN(parkMaxBytes))
	rounds := 2 + rand.IntN(5)
	for range rounds {
		ptr, err := p.Alloc(n)
		require.NoError(t, err)
		require.NoError(t, p.Free(ptr))
	}
	require.NoError(t, rec.Close())
	st := p.Stats()
	assert.Equal(t, int64(rounds-1), st.FromCache, "all but the first from the parked block")
	g, err := accounting.ReadLog(&log)
	require.NoError(t, err)
	allocs, frees := 0, 0
	for _, e := range g.Events {
		switch {
		case e.Block && e.Op == accounting.OpAlloc:
			allocs++
			assert.Equal(t, n, e.Bytes, "the size asked for")
		case e.Block && e.Op == accounting.OpFree:
			frees++
		}
	}
	assert.Equal(t, rounds, allocs)
	assert.Equal(t, rounds, frees)
}
