package pinned_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
)

const gib = int64(1) << 30

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{
		{1, 4096},
		{4096, 4096},
		{4097, 8192},
		{32 << 10, 32 << 10},
		{32<<10 + 1, 36 << 10},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 1<<20 + 128<<10},
		{20 * gib, 20 * gib}, // PyTorch's rounding pins 32 GiB for this
		{17 * gib, 18 * gib}, // an eighth of 16 GiB is the step
		{31*gib + 1, 32 * gib},
		{15 << 59, 15 << 59}, // the largest class: 2^63 less a step of 2^59
		{15<<59 + 1, -1},     // no class
		{math.MaxInt64, -1},
	} {
		assert.Equal(t, tc.want, pinned.SizeClass(tc.n), "SizeClass(%d)", tc.n)
	}
	// Property: a class holds the request and wastes at most an eighth of it
	// (or a page, below 32 KiB).
	for range 100000 {
		n := rand.Int64N(1<<40) + 1
		if rand.IntN(2) == 0 {
			n = rand.Int64N(1<<20) + 1
		}
		c := pinned.SizeClass(n)
		require.GreaterOrEqual(t, c, n)
		require.LessOrEqual(t, c-n, max(n/8, 4095), "n=%d class=%d", n, c)
		require.Equal(t, c, pinned.SizeClass(c), "a class is its own class")
	}
}

func TestPoolReuse(t *testing.T) {
	dev := testdev.Open(t)
	p, err := pinned.NewPool(dev, pinned.Mapped)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	cached := func() int64 { return dev.Ledger().Snapshot().Kinds[accounting.Mapped].Cached }

	a, err := p.Alloc(100 << 10)
	require.NoError(t, err)
	assert.Equal(t, int64(100<<10), a.Len())
	assert.Equal(t, pinned.SizeClass(100<<10), dev.Ledger().Current(accounting.Mapped), "the ledger counts the class")
	copy(a.Bytes(), testdev.RandomBytes(100<<10))
	addr := a.HostPtr()
	_, err = a.DevPtr()
	require.NoError(t, err, "a mapped pool hands out mapped buffers")
	require.NoError(t, a.Free())
	assert.Equal(t, pinned.SizeClass(100<<10), cached(), "a freed buffer is cached")
	assert.Zero(t, p.Stats().Waiting, "no copy uses it: not waiting")

	b, err := p.Alloc(99 << 10) // same class
	require.NoError(t, err)
	assert.Equal(t, addr, b.HostPtr(), "the cached memory is reused")
	assert.Len(t, b.Bytes(), 99<<10)
	assert.Zero(t, cached())
	c, err := p.Alloc(1 << 20) // another class
	require.NoError(t, err)
	assert.NotEqual(t, addr, c.HostPtr())

	st := p.Stats()
	assert.Equal(t, int64(3), st.Allocs)
	assert.Equal(t, int64(1), st.FromCache)
	assert.Equal(t, int64(2), st.FromDriver)
	assert.Equal(t, 2, st.Live)
	assert.Equal(t, int64(99<<10+1<<20), st.Requested)
	assert.Equal(t, pinned.SizeClass(99<<10)+1<<20, st.InUse)

	err = p.Close()
	assert.ErrorIs(t, err, pinned.ErrInUse, "buffers are still handed out")
	require.NoError(t, b.Free())
	require.NoError(t, c.Free())
	freed, err := p.Trim()
	require.NoError(t, err)
	assert.Equal(t, pinned.SizeClass(99<<10)+1<<20, freed)
	assert.Zero(t, dev.Ledger().Current(accounting.Mapped))
	assert.Zero(t, cached())
}

// A buffer freed to the pool while an async copy still uses it is not
// handed out again until the copy is done.
func TestPoolWaitsForPendingCopies(t *testing.T) {
	dev := testdev.Open(t)
	p, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	a, err := p.Alloc(8192)
	require.NoError(t, err)
	w := new(work)
	require.NoError(t, a.Guard(w))
	aPtr := a.HostPtr()
	require.NoError(t, a.Free(), "a pool takes a busy buffer back")
	assert.Zero(t, a.HostPtr(), "a freed buffer has no address")
	assert.Equal(t, 1, p.Stats().Waiting)

	b, err := p.Alloc(8192)
	require.NoError(t, err)
	assert.NotEqual(t, aPtr, b.HostPtr(), "the busy block is not reused")
	freed, err := p.Trim()
	require.NoError(t, err)
	assert.Zero(t, freed, "Trim leaves a busy block alone")

	w.done.Store(true)
	c, err := p.Alloc(8192)
	require.NoError(t, err)
	assert.Equal(t, aPtr, c.HostPtr(), "reused once the copy is done")
	require.NoError(t, b.Free())
	require.NoError(t, c.Free())

	// Close waits for the copies of cached blocks.
	d, err := p.Alloc(8192)
	require.NoError(t, err)
	w2 := new(work)
	require.NoError(t, d.Guard(w2))
	require.NoError(t, d.Free())
	require.NoError(t, p.Close())
	assert.True(t, w2.done.Load(), "Close waited for the copy")
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
	_, err = p.Alloc(10)
	assert.ErrorIs(t, err, device.ErrClosed)
	require.NoError(t, p.Close(), "Close is idempotent")
}

// Close waits for the copies that still used cached blocks and reports
// the one that failed, and still frees the blocks.
func TestPoolCloseReportsAFailedCopy(t *testing.T) {
	dev := testdev.Open(t)
	p, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	a, err := p.Alloc(rand.Int64N(1<<20) + 1)
	require.NoError(t, err)
	w := &failedWork{err: fmt.Errorf("copy %d: %w", rand.IntN(100), driver.ErrContextFailed)}
	require.NoError(t, a.Guard(w))
	require.NoError(t, a.Free(), "cached, its copy still running")
	err = p.Close()
	assert.ErrorIs(t, err, driver.ErrContextFailed, "the copy's failure")
	assert.True(t, w.done.Load(), "Close waited for the copy")
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "and freed the block")
}

// When the driver (here the ledger's limit) refuses, the pool frees its
// idle cache and retries once.
func TestPoolOutOfMemoryRetries(t *testing.T) {
	dev := testdev.Open(t)
	require.NoError(t, dev.Ledger().SetLimit(accounting.Pinned, 1<<20))
	defer dev.Ledger().SetLimit(accounting.Pinned, 0)
	p, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	a, err := p.Alloc(768 << 10)
	require.NoError(t, err)
	require.NoError(t, a.Free())
	b, err := p.Alloc(512 << 10) // another class: needs the cached 768 KiB back
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.Stats().Retries)
	_, err = p.Alloc(768 << 10)
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory, "nothing left to free")
	assert.Equal(t, int64(1), p.Stats().Retries, "with nothing cached there is nothing to retry with")
	require.NoError(t, b.Free())
	require.NoError(t, p.Close())
	_, err = p.Alloc(0)
	assert.Error(t, err)
}

func TestNewPoolErrors(t *testing.T) {
	dev := testdev.Open(t)
	_, err := pinned.NewPool(nil, 0)
	assert.Error(t, err)
	_, err = pinned.NewPool(dev, 1<<5)
	assert.Error(t, err)
	p, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	_, err = p.Alloc(-1)
	assert.Error(t, err)
	require.NoError(t, p.Close())
}

// A fault that the copy of a cached block reports stops the pool: that
// Alloc and every later one fail with it, the block stays in the cache,
// and Close still frees it.
func TestPoolFaultSeenInItsCache(t *testing.T) {
	dev := testdev.Open(t)
	p, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	n := rand.Int64N(1<<16) + 1
	a, err := p.Alloc(n)
	require.NoError(t, err)
	w := &failedWork{err: fmt.Errorf("copy %d: %w", rand.IntN(100), driver.ErrContextFailed)}
	require.NoError(t, a.Guard(w))
	require.NoError(t, a.Free(), "cached, its copy still running")
	w.done.Store(true) // the copy ended in the fault
	for i := range 2 {
		_, err = p.Alloc(n)
		require.ErrorIs(t, err, driver.ErrContextFailed, "Alloc %d after the fault", i)
	}
	assert.Equal(t, pinned.SizeClass(n), p.Stats().Cached, "the block stays in the cache")
	_ = p.Close()
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "Close freed the cache")
}
