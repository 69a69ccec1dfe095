package pool_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// newPool returns a pool on the test device, released when the test ends
// (before testdev checks that the device memory came back).
func newPool(t *testing.T, dev device.Device) *pool.Pool {
	t.Helper()
	p := pool.New(dev)
	t.Cleanup(func() { assert.NoError(t, p.Release()) })
	return p
}

// openSim opens a sim device of the given memory, closed when the test ends.
func openSim(t *testing.T, spec string) device.Device {
	t.Helper()
	dev, err := device.Open(spec)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, dev.Close()) })
	return dev
}

func TestAllocRounding(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	for _, tc := range []struct {
		ask, want int64
	}{
		{0, 256}, {1, 256}, {256, 256}, {257, 512}, {1000, 1024}, {1 << 20, 1 << 20}, {3<<20 + 5, 3<<20 + 256},
	} {
		before := p.Stats().InUse
		ptr, err := p.Alloc(tc.ask)
		require.NoError(t, err, "alloc %d", tc.ask)
		assert.Zero(t, uintptr(ptr)%accounting.Granularity, "alignment of %d", tc.ask)
		assert.Equal(t, tc.want, p.Stats().InUse-before, "alloc %d", tc.ask)
		require.NoError(t, p.Free(ptr))
	}
	_, err := p.Alloc(-1)
	assert.ErrorIs(t, err, device.ErrInvalidValue)
}

func TestCacheReuseSplitAndCoalesce(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	a, err := p.Alloc(1000)
	require.NoError(t, err)
	b, err := p.Alloc(3000)
	require.NoError(t, err)
	c, err := p.Alloc(500)
	require.NoError(t, err)
	st := p.Stats()
	assert.Equal(t, int64(1), st.FromDevice, "three small blocks come from one segment")
	assert.Equal(t, int64(2), st.FromCache)
	assert.Equal(t, a+1024, b, "blocks are cut from the segment in order")
	assert.Equal(t, b+3072, c)
	assert.Equal(t, int64(2<<20), dev.Ledger().Current(accounting.Device)-0, "the ledger counts the one segment")

	cached := func() int64 { return dev.Ledger().Snapshot().Kinds[accounting.Device].Cached }
	assert.Equal(t, int64(2<<20-1024-3072-512), cached(), "the ledger shows the segment's unused tail as cached")
	require.NoError(t, p.Free(b))
	st = p.Stats()
	assert.Equal(t, st.Cached, cached(), "the ledger's cached bytes follow the pool's")
	assert.Equal(t, 2, st.FreeBlocks, "the freed hole and the segment's tail")
	assert.InDelta(t, 3072.0/float64(st.Cached), st.Fragmentation, 1e-9)

	// Best fit: a 2000-byte request takes the 3072-byte hole, not the tail.
	d, err := p.Alloc(2000)
	require.NoError(t, err)
	assert.Equal(t, b, d)
	require.NoError(t, p.Free(d))

	for _, ptr := range []devarray.Ptr{a, c} {
		require.NoError(t, p.Free(ptr))
	}
	st = p.Stats()
	assert.Equal(t, 1, st.FreeBlocks, "all blocks merged back into one")
	assert.Zero(t, st.Fragmentation)
	assert.Equal(t, int64(2<<20), st.LargestFree)
	assert.Zero(t, st.InUse)
	assert.Equal(t, int64(4000+1024+3072+512-4000), st.PeakInUse-0, "peak: 1024+3072+512 bytes live at once")

	freed, err := p.Trim()
	require.NoError(t, err)
	assert.Equal(t, int64(2<<20), freed)
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
	assert.Zero(t, cached(), "nothing cached after Trim")
}

// TestSegmentSizes: with the reserve ratio off, PyTorch's segment sizes;
// with it on (the default), a fresh pool's medium request gets a segment
// of its own size, since 20 MiB would be more than 1.25 times what it hands out.
func TestSegmentSizes(t *testing.T) {
	dev := testdev.Open(t)
	for _, tc := range []struct {
		ask, segment int64
		ratio        float64
	}{
		{100, 2 << 20, 0}, {1 << 20, 2 << 20, 0}, {1<<20 + 1, 20 << 20, 0}, {10 << 20, 20 << 20, 0},
		{10<<20 + 1, 12 << 20, 0}, {33 << 20, 34 << 20, 0},
		{100, 2 << 20, pool.DefaultReserveRatio}, {1<<20 + 1, 2 << 20, pool.DefaultReserveRatio},
		{5 << 20, 6 << 20, pool.DefaultReserveRatio}, {10 << 20, 10 << 20, pool.DefaultReserveRatio},
		{33 << 20, 34 << 20, pool.DefaultReserveRatio}, {1<<20 + 1, 20 << 20, 20},
	} {
		p := pool.New(dev)
		require.NoError(t, p.SetReserveRatio(tc.ratio))
		ptr, err := p.Alloc(tc.ask)
		require.NoError(t, err)
		assert.Equal(t, tc.segment, p.Stats().Reserved, "segment for %d bytes, reserve ratio %v", tc.ask, tc.ratio)
		assert.Equal(t, tc.segment, dev.Ledger().Current(accounting.Device))
		require.NoError(t, p.Free(ptr))
		require.NoError(t, p.Release())
		assert.Zero(t, dev.Ledger().Current(accounting.Device))
	}
}

// TestReserveRatio: before the pool asks the device for more, it gives
// back whole free segments that would take it past the ratio, and a large
// request leaves a whole segment much larger than itself for that.
func TestReserveRatio(t *testing.T) {
	dev := openSim(t, "sim:0?mem=256MiB")
	for _, tc := range []struct {
		name                 string
		ratio                float64
		first, second        int64
		reserved             int64 // after the second allocation
		fromDevice, released int64
		sameAddress          bool
	}{
		{"gives back the idle segment", pool.DefaultReserveRatio, 40 << 20, 12 << 20, 12 << 20, 2, 1, false},
		{"keeps it under a loose ratio", 2, 40 << 20, 12 << 20, 52 << 20, 2, 0, false},
		{"off: splits it", 0, 40 << 20, 12 << 20, 40 << 20, 1, 0, true},
		{"splits a segment not much larger", pool.DefaultReserveRatio, 20 << 20, 14 << 20, 20 << 20, 1, 0, true},
		{"splits a segment exactly half as large again", pool.DefaultReserveRatio, 18 << 20, 12 << 20, 18 << 20, 1, 0, true},
		{"a medium request splits a whole segment", pool.DefaultReserveRatio, 20 << 20, 10 << 20, 20 << 20, 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, dev)
			require.NoError(t, p.SetReserveRatio(tc.ratio))
			a, err := p.Alloc(tc.first)
			require.NoError(t, err)
			require.NoError(t, p.Free(a))
			b, err := p.Alloc(tc.second)
			require.NoError(t, err)
			st := p.Stats()
			assert.Equal(t, tc.reserved, st.Reserved, "reserved")
			assert.Equal(t, tc.fromDevice, st.FromDevice, "segments from the device")
			assert.Equal(t, tc.released, st.Released, "segments given back")
			assert.Equal(t, tc.ratio, st.ReserveRatio)
			if tc.sameAddress { // (a new segment may come back at the old one's address)
				assert.Equal(t, a, b, "the second block is cut from the first's segment")
			}
			assert.Equal(t, st.Reserved, dev.Ledger().Current(accounting.Device), "the ledger counts what the pool holds")
			require.NoError(t, p.Free(b))
		})
	}
}

// TestOutOfMemoryTakesAWholeSegment: a whole segment a large request would
// leave alone is still taken when the device has no room for a new one.
func TestOutOfMemoryTakesAWholeSegment(t *testing.T) {
	dev := openSim(t, "sim:0?mem=48MiB")
	p := newPool(t, dev)
	require.NoError(t, p.SetReserveRatio(10)) // loose: the idle segment is not given back
	a, err := p.Alloc(40 << 20)
	require.NoError(t, err)
	require.NoError(t, p.Free(a))
	b, err := p.Alloc(24 << 20)
	require.NoError(t, err)
	st := p.Stats()
	assert.Equal(t, a, b, "cut from the cached segment")
	assert.Equal(t, int64(40<<20), st.Reserved)
	assert.Equal(t, int64(1), st.FromCache)
	assert.Zero(t, st.OOMRetries, "the cache was not freed")
	require.NoError(t, p.Free(b))
}

func TestFreeErrors(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	ptr, err := p.Alloc(4096)
	require.NoError(t, err)
	assert.ErrorIs(t, p.Free(ptr+256), pool.ErrNotAllocated, "inside a block")
	assert.ErrorIs(t, p.Free(0xdead00), pool.ErrNotAllocated, "foreign pointer")
	require.NoError(t, p.Free(ptr))
	assert.ErrorIs(t, p.Free(ptr), pool.ErrNotAllocated, "double free")
}

func TestReleaseWithLiveBlocks(t *testing.T) {
	dev := testdev.Open(t)
	p := pool.New(dev)
	a, err := p.Alloc(5000)
	require.NoError(t, err)
	b, err := p.Alloc(50 << 20)
	require.NoError(t, err)
	require.NoError(t, p.Free(b))
	err = p.Release()
	assert.ErrorIs(t, err, pool.ErrInUse)
	assert.Contains(t, err.Error(), "1 blocks")
	assert.Equal(t, int64(2<<20), dev.Ledger().Current(accounting.Device), "only the live block's segment is kept")
	require.NoError(t, p.Free(a))
	require.NoError(t, p.Release())
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
}

func TestLimitCountsInUseNotCached(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	require.NoError(t, p.SetLimit(1<<20))
	a, err := p.Alloc(1 << 20)
	require.NoError(t, err)
	_, err = p.Alloc(256)
	var oom *pool.OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	assert.True(t, oom.ByLimit)
	assert.Equal(t, int64(1<<20), oom.Limit)
	assert.Equal(t, int64(1<<20), oom.InUse)
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory)
	require.NoError(t, p.Free(a))

	// 2 MiB are cached now, more than the limit; they must not count.
	assert.Equal(t, int64(2<<20), p.Stats().Cached)
	for range 3 {
		a, err = p.Alloc(1 << 20)
		require.NoError(t, err, "cached bytes count against the limit")
		require.NoError(t, p.Free(a))
	}
	assert.ErrorIs(t, p.SetLimit(-1), device.ErrInvalidValue)
}

func TestOutOfMemoryFreesCacheAndRetries(t *testing.T) {
	dev := openSim(t, "sim:0?mem=32MiB")
	p := pool.New(dev)
	defer func() { assert.NoError(t, p.Release()) }()
	// With the reserve ratio off, the cache shrinks only when the device runs out.
	require.NoError(t, p.SetReserveRatio(0))

	// Fill the cache: 20 MiB cached in a medium segment, and 2 MiB in the
	// small segment the small block gets (small requests never split a
	// medium or large segment).
	m, err := p.Alloc(5 << 20)
	require.NoError(t, err)
	s, err := p.Alloc(4096)
	require.NoError(t, err)
	require.NoError(t, p.Free(m))
	require.NoError(t, p.Free(s))
	require.Equal(t, int64(22<<20), p.Stats().Cached)
	require.Equal(t, 2, p.Stats().Segments)

	// 24 MiB fits only if the cache goes back to the device first.
	big, err := p.Alloc(24 << 20)
	require.NoError(t, err)
	st := p.Stats()
	assert.Equal(t, int64(1), st.OOMRetries)
	assert.Equal(t, int64(24<<20), st.Reserved, "the cached segment was freed")
	assert.Equal(t, int64(24<<20), dev.Ledger().Current(accounting.Device))
	failed := func() int64 { return dev.Ledger().Snapshot().Kinds[accounting.Device].Failed }
	assert.Equal(t, int64(1), failed(), "the device refused once, before the cache was freed")

	// More than the device has left: a typed error with the device's figures.
	_, err = p.Alloc(20 << 20)
	var oom *pool.OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	assert.False(t, oom.ByLimit)
	assert.Equal(t, int64(20<<20), oom.Requested)
	assert.Equal(t, int64(32<<20), oom.Total)
	assert.Equal(t, int64(8<<20), oom.Free)
	assert.Equal(t, int64(24<<20), oom.InUse)
	assert.Zero(t, oom.Cached)
	assert.Equal(t, int64(2), p.Stats().OOMRetries)
	assert.Equal(t, int64(3), failed(), "the device refused it twice: before and after the (empty) cache was freed")
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory)
	var devOOM *accounting.OutOfMemoryError
	assert.ErrorAs(t, err, &devOOM, "unwraps to the device's error")
	assert.Regexp(t, `out of memory allocating 20.00 MiB \(free 8.00 MiB, total 32.00 MiB, limit none; in use 24.00 MiB, cached 0 B\)`, err.Error())
	assert.Equal(t, int64(24<<20), dev.Ledger().Current(accounting.Device), "the failure allocated nothing")
	require.NoError(t, p.Free(big))
}

func TestStreamOrderedReuse(t *testing.T) {
	dev := openSim(t, "sim:0?mem=64MiB")
	p := pool.New(dev)
	defer func() { assert.NoError(t, p.Release()) }()
	s1, err := dev.NewStream()
	require.NoError(t, err)
	defer s1.Close()
	s2, err := dev.NewStream()
	require.NoError(t, err)
	defer s2.Close()

	a, err := p.AllocAsync(64<<10, s1)
	require.NoError(t, err)
	resume, err := sim.Pause(s1) // s1 cannot pass the free until resumed
	require.NoError(t, err)
	defer resume()
	require.NoError(t, p.Free(a)) // freed on s1, its allocation stream
	assert.Equal(t, 1, p.Stats().PendingBlocks)

	b, err := p.AllocAsync(64<<10, s2)
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "another stream must not get a block its stream has not passed")
	c, err := p.AllocAsync(64<<10, s1)
	require.NoError(t, err)
	assert.Equal(t, a, c, "the freeing stream reuses it at once: it runs in order")
	require.NoError(t, p.FreeAsync(c, s1))
	require.NoError(t, p.FreeAsync(b, s2))

	resume()
	require.NoError(t, s1.Synchronize())
	require.NoError(t, s2.Synchronize())
	d, err := p.AllocAsync(64<<10, s2)
	require.NoError(t, err)
	assert.Equal(t, a, d, "once s1 passed the free, any stream may reuse it (best fit, lowest address)")
	assert.Zero(t, p.Stats().PendingBlocks)
	require.NoError(t, p.FreeAsync(d, nil))
}

func TestReleaseWaitsForPendingFrees(t *testing.T) {
	dev := openSim(t, "sim:0?mem=64MiB")
	p := pool.New(dev)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	a, err := p.AllocAsync(1<<20, s)
	require.NoError(t, err)
	resume, err := sim.Pause(s)
	require.NoError(t, err)
	require.NoError(t, p.Free(a))
	released := make(chan error)
	go func() { released <- p.Release() }()
	select {
	case err := <-released:
		t.Fatalf("Release returned (%v) before the stream passed the free", err)
	default:
	}
	resume()
	require.NoError(t, <-released)
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
}

func TestArraysOnThePool(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	want := testdev.RandomBytes(4 * 300 * 200)
	a, err := devarray.FromBytes(p, want, devarray.Float32, 300, 200)
	require.NoError(t, err)
	got := make([]byte, len(want))
	require.NoError(t, a.CopyTo(got))
	assert.Equal(t, want, got)
	require.NoError(t, a.Free())
	st := p.Stats()
	assert.Zero(t, st.InUse)
	assert.Equal(t, int64(1), st.Allocs)
	assert.Equal(t, int64(2<<20), dev.Ledger().Current(accounting.Device), "freed to the cache, not the device")
	assert.Equal(t, int64(len(want)), dev.Ledger().Snapshot().CopyTotal(accounting.HtoD).Bytes)
	assert.True(t, errors.Is(p.Free(a.Ptr()), pool.ErrNotAllocated), "the array's Free already returned it")
}

func TestFreeOnAnotherStreamWaitsForBoth(t *testing.T) {
	dev := openSim(t, "sim:0?mem=64MiB")
	p := pool.New(dev)
	defer func() { assert.NoError(t, p.Release()) }()
	var streams [2]device.Stream
	for i := range streams {
		s, err := dev.NewStream()
		require.NoError(t, err)
		defer s.Close()
		streams[i] = s
	}
	s1, s2 := streams[0], streams[1]
	a, err := p.AllocAsync(1<<20, s1)
	require.NoError(t, err)
	resume, err := sim.Pause(s1) // work on a still queued on s1
	require.NoError(t, err)
	defer resume()
	require.NoError(t, p.FreeAsync(a, s2)) // last used on s2
	require.NoError(t, s2.Synchronize())   // s2 has passed the free; s1 has not

	for _, s := range []device.Stream{s1, s2, nil} {
		b, err := p.AllocAsync(1<<20, s)
		require.NoError(t, err)
		assert.NotEqual(t, a, b, "reused before both streams passed the free")
		require.NoError(t, p.FreeAsync(b, nil))
	}
	resume()
	require.NoError(t, s1.Synchronize())
	require.NoError(t, s2.Synchronize()) // the loop's frees on s2 complete too, so all blocks merge
	c, err := p.AllocAsync(1<<20, s2)
	require.NoError(t, err)
	assert.Equal(t, a, c)
	require.NoError(t, p.Free(c))
}

func TestInjectedAllocFailure(t *testing.T) {
	// The device fails the pool's first malloc (its 2 MiB segment) with an
	// injected out-of-memory error: the pool asks for the exact size next.
	dev := openSim(t, "sim:0?mem=64MiB&fail-alloc=1")
	p := pool.New(dev)
	ptr, err := p.Alloc(4096)
	require.NoError(t, err)
	st := p.Stats()
	assert.Equal(t, int64(4096), st.Reserved, "a segment of exactly the request")
	assert.Zero(t, st.OOMRetries, "no need to free the cache")
	assert.Equal(t, int64(1), dev.Ledger().Snapshot().Kinds[accounting.Device].Failed)
	require.NoError(t, p.Free(ptr))
	require.NoError(t, p.Release())
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "nothing left behind")
}

// A block allocated on the default stream and freed on another stream
// (its last use was queued there) is not handed out again until that
// stream has passed the free: not by the pool's fast path, not at once.
func TestFreeOnAnotherStreamWaitsForIt(t *testing.T) {
	dev := openSim(t, "sim:0?mem=64MiB")
	p := pool.New(dev)
	defer func() { assert.NoError(t, p.Release()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	n := rand.Int64N(8<<10) + 1 // small: the fast path's size
	a, err := p.Alloc(n)
	require.NoError(t, err)
	resume, err := sim.Pause(s) // s cannot pass the free until resumed
	require.NoError(t, err)
	defer resume()
	require.NoError(t, p.FreeAsync(a, s))
	assert.Equal(t, 1, p.Stats().PendingBlocks, "waiting for s")
	b, err := p.Alloc(n)
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "the default stream must not get a block s has not passed")
	require.NoError(t, p.Free(b))
	resume()
	require.NoError(t, s.Synchronize())
}

// A zero-byte allocation on a stream is a block of one granule, as on the
// default stream, and frees as any other.
func TestAllocZeroOnAStream(t *testing.T) {
	dev := testdev.Open(t)
	p := newPool(t, dev)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	for _, st := range []device.Stream{nil, s} {
		ptr, err := p.AllocAsync(0, st)
		require.NoError(t, err)
		assert.NotZero(t, ptr)
		assert.Equal(t, int64(256), p.Stats().InUse)
		require.NoError(t, p.FreeAsync(ptr, st))
	}
}
