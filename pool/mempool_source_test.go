package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// memPools are the stream-ordered pools a caching pool can sit on: the
// device's default pool and one NewMemPool makes (destroyed when the test
// ends).
var memPools = []struct {
	name string
	open func(*testing.T, device.Device) device.MemPool
}{
	{"default", func(t *testing.T, dev device.Device) device.MemPool {
		mp, err := dev.DefaultMemPool()
		require.NoError(t, err)
		return mp
	}},
	{"new", func(t *testing.T, dev device.Device) device.MemPool {
		mp, err := dev.NewMemPool()
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, mp.Destroy()) })
		return mp
	}},
}

// newStream returns a stream of dev, closed when the test ends.
func newStream(t *testing.T, dev device.Device) device.Stream {
	t.Helper()
	s, err := dev.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// poolFigures returns the ledger's figures of the stream-ordered pool named name.
func poolFigures(t *testing.T, dev device.Device, name string) accounting.PoolStats {
	t.Helper()
	for _, ps := range dev.Ledger().Snapshot().Pools {
		if ps.Name == name {
			return ps
		}
	}
	require.Failf(t, "no pool figures", "the ledger has no figures of pool %q", name)
	return accounting.PoolStats{}
}

// The caching pool over a stream-ordered pool: its segments are the
// stream-ordered pool's allocations, in the ledger under StreamOrdered and
// in the stream-ordered pool's used bytes, none under Device; its blocks
// hold what is written to them; Release gives everything back.
func TestFromMemPoolLedger(t *testing.T) {
	for _, mpc := range memPools {
		for _, onStream := range []bool{false, true} {
			t.Run(mpc.name+map[bool]string{false: "/default-stream", true: "/stream"}[onStream], func(t *testing.T) {
				r := rand.For(t)
				dev := testdev.Open(t)
				mp := mpc.open(t, dev)
				var s device.Stream
				if onStream {
					s = newStream(t, dev)
				}
				led := dev.Ledger()
				before := led.Snapshot()
				p := pool.New(dev, pool.FromMemPool(mp))

				sizes := []int64{1 + r.Int64N(64<<10), 1 + r.Int64N(1<<20), 1<<20 + 1 + r.Int64N(1<<20)}
				ptrs := make([]devarray.Ptr, len(sizes))
				for i, n := range sizes {
					var err error
					ptrs[i], err = p.AllocAsync(n, s)
					require.NoError(t, err, "alloc %d bytes", n)
					want := testdev.RandomBytes(int(n))
					require.NoError(t, dev.Synchronize())
					require.NoError(t, dev.CopyHtoD(ptrs[i], want))
					require.Equal(t, want, testdev.Peek(t, dev, ptrs[i], n), "block %d holds what was written", i)
				}
				st := p.Stats()
				assert.Equal(t, int64(2), st.FromDevice, "a small and a medium segment")
				d := accounting.Diff(before, led.Snapshot())
				assert.Equal(t, st.Reserved, d.Kinds[accounting.StreamOrdered].Current, "the segments are stream-ordered memory")
				assert.Equal(t, int64(2), d.Kinds[accounting.StreamOrdered].Allocs)
				assert.Equal(t, st.Cached, led.Snapshot().Kinds[accounting.StreamOrdered].Cached,
					"the ledger's stream-ordered cached bytes are the pool's")
				assert.Zero(t, d.Kinds[accounting.Device].Allocs, "nothing from cuMemAlloc")
				assert.Equal(t, st.Reserved, poolFigures(t, dev, mp.Name()).Used,
					"the stream-ordered pool's used bytes are the caching pool's segments")

				for _, ptr := range ptrs {
					require.NoError(t, p.FreeAsync(ptr, s))
				}
				require.NoError(t, p.Release())
				require.NoError(t, dev.Synchronize())
				assert.Zero(t, led.Current(accounting.StreamOrdered), "every segment went back")
				assert.Zero(t, led.Snapshot().Kinds[accounting.StreamOrdered].Cached)
				assert.Zero(t, poolFigures(t, dev, mp.Name()).Used)
			})
		}
	}
}

// A segment grown on a stream is that stream's at once and another
// stream's only once the stream has passed its allocation, as a block
// freed on the stream is.
func TestFromMemPoolSegmentWaitsForItsStream(t *testing.T) {
	dev := testdev.Open(t)
	mp, err := dev.DefaultMemPool()
	require.NoError(t, err)
	s1, s2 := newStream(t, dev), newStream(t, dev)
	p := pool.New(dev, pool.FromMemPool(mp))
	t.Cleanup(func() { assert.NoError(t, p.Release()) })
	r := rand.For(t)
	n := 256 + r.Int64N(4096)

	resume := testdev.Hold(t, s1)
	a, err := p.AllocAsync(n, s1)
	require.NoError(t, err)
	b, err := p.AllocAsync(n, s1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.Stats().FromDevice, "s1 takes the rest of its own segment at once")
	c, err := p.AllocAsync(n, s2)
	require.NoError(t, err)
	assert.Equal(t, int64(2), p.Stats().FromDevice, "s2 gets a segment of its own while s1 has not reached the first")
	resume()
	require.NoError(t, s1.Synchronize())
	d, err := p.AllocAsync(n, s2)
	require.NoError(t, err)
	st := p.Stats()
	assert.Equal(t, int64(2), st.FromDevice, "once s1 passed the allocation, s2 takes from its segment")
	assert.Equal(t, int64(2), st.FromCache)
	for _, x := range []devarray.Ptr{a, b} {
		require.NoError(t, p.FreeAsync(x, s1))
	}
	for _, x := range []devarray.Ptr{c, d} {
		require.NoError(t, p.FreeAsync(x, s2))
	}
}

// When the device runs out, the caching pool gives its free segments back
// and the stream-ordered pool, which would keep them up to its release
// threshold, is trimmed, so the request is served.
func TestFromMemPoolOutOfMemoryReclaims(t *testing.T) {
	dev := openSim(t, "sim:0?mem=32MiB")
	mp, err := dev.NewMemPool()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, mp.Destroy()) })
	require.NoError(t, mp.SetReleaseThreshold(1<<40))
	p := pool.New(dev, pool.FromMemPool(mp))
	require.NoError(t, p.SetReserveRatio(0))
	t.Cleanup(func() { assert.NoError(t, p.Release()) })
	r := rand.For(t)

	small, err := p.Alloc(12<<20 + 1 + r.Int64N(1<<20)) // a 14 MiB segment
	require.NoError(t, err)
	require.NoError(t, p.Free(small))
	big, err := p.Alloc(24<<20 + 1 + r.Int64N(1<<20)) // with the first held, 40 MiB would not fit
	require.NoError(t, err)
	st := p.Stats()
	assert.Equal(t, int64(1), st.OOMRetries)
	assert.Equal(t, int64(1), st.Released)
	assert.Equal(t, int64(26<<20), poolFigures(t, dev, mp.Name()).Reserved, "the stream-ordered pool holds the new segment alone")
	require.NoError(t, p.Free(big))
}

// A pool given no stream-ordered pool refuses to allocate and takes nothing.
func TestFromMemPoolNil(t *testing.T) {
	dev := testdev.Open(t)
	p := pool.New(dev, pool.FromMemPool(nil))
	_, err := p.Alloc(1 + rand.For(t).Int64N(1<<20))
	require.ErrorIs(t, err, device.ErrInvalidValue)
	assert.Zero(t, dev.Ledger().Current(accounting.StreamOrdered))
	assert.Zero(t, p.Stats().Reserved)
	require.NoError(t, p.Release())
}

// Once the device is closed, a pool over its stream-ordered pool holds
// nothing: the device's Close gave the segments back; frees still work,
// Release says the segments cannot be given back, and the ledger's
// stream-ordered bytes, current and cached, are zero.
func TestFromMemPoolAfterDeviceClose(t *testing.T) {
	dev := testdev.OpenOwned(t) // closed by the test itself
	mp, err := dev.DefaultMemPool()
	require.NoError(t, err)
	p := pool.New(dev, pool.FromMemPool(mp))
	s, err := dev.NewStream()
	require.NoError(t, err)
	r := rand.For(t)
	a, err := p.Alloc(1 + r.Int64N(64<<10))
	require.NoError(t, err)
	b, err := p.AllocAsync(1+r.Int64N(4<<20), s)
	require.NoError(t, err)
	require.Positive(t, dev.Ledger().Current(accounting.StreamOrdered))

	require.NoError(t, dev.Close())
	led := dev.Ledger()
	assert.Zero(t, led.Current(accounting.StreamOrdered), "the device's Close freed the segments")
	assert.NoError(t, p.Free(a), "a free after the Close: the block goes back to the pool")
	assert.NoError(t, p.FreeSynced(b, nil), "so does one of a block of a closed stream")
	assert.ErrorIs(t, p.Release(), driver.ErrClosed, "the segments cannot be given back")
	assert.Zero(t, led.Snapshot().Kinds[accounting.StreamOrdered].Cached)
	_, err = p.Alloc(1)
	assert.ErrorIs(t, err, driver.ErrClosed)
}
