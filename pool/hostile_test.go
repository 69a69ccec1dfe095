package pool_test

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/hostile"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// Every exported function and method of pool, given nil, zero, negative,
// overflowing, freed and closed inputs, returns a typed error (zero values
// where it returns none) and leaks nothing (testdev checks the ledger).
func TestHostileInputs(t *testing.T) {
	dev := testdev.Open(t)
	p := pool.New(dev)
	defer func() { require.NoError(t, p.Release()) }()
	live, err := p.Alloc(1000)
	require.NoError(t, err)
	defer p.Free(live)
	freed, err := p.Alloc(3000)
	require.NoError(t, err)
	require.NoError(t, p.Free(freed))
	big := int64(math.MaxInt64)

	var cases []hostile.Case
	for _, bad := range []struct {
		name string
		p    *pool.Pool
	}{{"nil", nil}, {"zero", new(pool.Pool)}, {"no device", pool.New(nil)}} {
		q := bad.p
		add := func(name string, want error, call func() error) {
			cases = append(cases, hostile.Case{bad.name + " Pool " + name, call, want})
		}
		add("Alloc", pool.ErrNil, func() error { return hostile.Second(q.Alloc(10)) })
		add("AllocAsync", pool.ErrNil, func() error { return hostile.Second(q.AllocAsync(10, nil)) })
		add("Malloc", pool.ErrNil, func() error { return hostile.Second(q.Malloc(10)) })
		add("Free", pool.ErrNil, func() error { return q.Free(live) })
		add("FreeAsync", pool.ErrNil, func() error { return q.FreeAsync(live, nil) })
		add("SetLimit", pool.ErrNil, func() error { return q.SetLimit(10) })
		add("SetReserveRatio", pool.ErrNil, func() error { return q.SetReserveRatio(2) })
		add("Trim", pool.ErrNil, func() error { return hostile.Second(q.Trim()) })
		add("Release", pool.ErrNil, q.Release)
		add("Memset", pool.ErrNil, func() error { return q.Memset(live, 0, 8) })
		add("CopyHtoD", pool.ErrNil, func() error { return q.CopyHtoD(live, make([]byte, 8)) })
		add("CopyDtoH", pool.ErrNil, func() error { return q.CopyDtoH(make([]byte, 8), live) })
		add("Memcpy2D", pool.ErrNil, func() error { return q.Memcpy2D(devarray.Memcpy2D{}) })
		add("Empty on it", pool.ErrNil, func() error { return hostile.Second(devarray.Empty(q, devarray.Float32, 4)) })
		add("getters", nil, func() error {
			assert.Nil(t, q.Device())
			assert.Zero(t, q.DeviceID())
			assert.Zero(t, q.Stats())
			return nil
		})
	}
	cases = append(cases,
		hostile.Case{"Alloc negative", func() error { return hostile.Second(p.Alloc(-1)) }, device.ErrInvalidValue},
		hostile.Case{"Alloc MinInt64", func() error { return hostile.Second(p.Alloc(math.MinInt64)) }, device.ErrInvalidValue},
		hostile.Case{"Alloc MaxInt64", func() error { return hostile.Second(p.Alloc(big)) }, accounting.ErrOutOfMemory}, // rounding up to a granule passes 2^63: more than any device has
		hostile.Case{"Alloc near MaxInt64", func() error { return hostile.Second(p.Alloc(big - 1<<20)) }, accounting.ErrOutOfMemory},
		hostile.Case{"Alloc past a limit near MaxInt64", func() error {
			q := pool.New(dev)
			defer q.Release()
			require.NoError(t, q.SetLimit(64<<20))
			a, err := q.Alloc(4 << 20)
			require.NoError(t, err)
			defer q.Free(a)
			_, err = q.Alloc(big - 1<<20) // InUse + size overflows
			var oom *pool.OutOfMemoryError
			require.ErrorAs(t, err, &oom)
			assert.True(t, oom.ByLimit, "the limit refuses it, not the device")
			return err
		}, accounting.ErrOutOfMemory},
		hostile.Case{"Alloc more than the device", func() error { return hostile.Second(p.Alloc(1 << 40)) }, accounting.ErrOutOfMemory},
		hostile.Case{"SetLimit negative", func() error { return p.SetLimit(-1) }, device.ErrInvalidValue},
		hostile.Case{"SetReserveRatio below 1", func() error { return p.SetReserveRatio(0.5) }, device.ErrInvalidValue},
		hostile.Case{"SetReserveRatio negative", func() error { return p.SetReserveRatio(-1) }, device.ErrInvalidValue},
		hostile.Case{"SetReserveRatio NaN", func() error { return p.SetReserveRatio(math.NaN()) }, device.ErrInvalidValue},
		hostile.Case{"SetReserveRatio Inf", func() error { return p.SetReserveRatio(math.Inf(1)) }, device.ErrInvalidValue},
		hostile.Case{"SetReserveRatio MaxFloat64", func() error {
			err := p.SetReserveRatio(math.MaxFloat64) // the largest ratio there is: as good as none
			return errors.Join(err, p.SetReserveRatio(pool.DefaultReserveRatio))
		}, nil},
		hostile.Case{"Free twice", func() error { return p.Free(freed) }, pool.ErrNotAllocated},
		hostile.Case{"Free 0", func() error { return p.Free(0) }, pool.ErrNotAllocated},
		hostile.Case{"Free inside a block", func() error { return p.Free(live + 256) }, pool.ErrNotAllocated},
		hostile.Case{"Free a device pointer", func() error {
			a, err := dev.Malloc(256)
			require.NoError(t, err)
			defer dev.Free(a)
			return p.Free(a)
		}, pool.ErrNotAllocated},
		hostile.Case{"Memset past the block", func() error { return p.Memset(live, 0, 1<<40) }, device.ErrInvalidPointer},
		hostile.Case{"CopyHtoD to 0", func() error { return p.CopyHtoD(0, make([]byte, 8)) }, device.ErrInvalidPointer},
		hostile.Case{"Memcpy2D zero", func() error { return p.Memcpy2D(devarray.Memcpy2D{Width: 1, Height: 1}) }, device.ErrInvalidValue},
	)
	hostile.Run(t, cases)
}

// A pool whose device was closed under it: allocations that need the
// device fail with ErrClosed, and so does every use of the memory it
// hands out, Trim and Release. Nothing panics or touches freed memory.
func TestHostileClosedDevice(t *testing.T) {
	dev := testdev.OpenOwned(t)
	p := pool.New(dev)
	a, err := p.Alloc(1000)
	require.NoError(t, err)
	require.NoError(t, p.Free(a))
	b, err := p.Alloc(4 << 20)
	require.NoError(t, err)
	require.NoError(t, dev.Close())

	_, err = p.Alloc(64 << 20)
	assert.ErrorIs(t, err, device.ErrClosed, "a new segment")
	_, err = p.Alloc(1000)
	assert.ErrorIs(t, err, device.ErrClosed, "a cached block went with the device's memory")
	assert.ErrorIs(t, p.CopyHtoD(b, make([]byte, 8)), device.ErrClosed)
	require.NoError(t, p.Free(b), "the pool takes its block back")
	_, err = p.Trim()
	assert.ErrorIs(t, err, device.ErrClosed)
	assert.ErrorIs(t, p.Release(), device.ErrClosed)
	_, err = devarray.Empty(p, devarray.Float32, 1<<24)
	assert.ErrorIs(t, err, device.ErrClosed)
}

// Concurrent hostile use of one pool: allocations and frees on streams and off, trims and stats from many goroutines.
// Nothing panics, the race detector finds nothing, errors are typed, and
// the pool gives everything back.
func TestHostileConcurrentUse(t *testing.T) {
	dev := testdev.Open(t)
	p := pool.New(dev)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				n := int64(256 * (1 + (g*31+i)%4000))
				switch g % 4 {
				case 0, 1:
					ptr, err := p.Alloc(n)
					if err != nil {
						assert.ErrorIs(t, err, accounting.ErrOutOfMemory)
						continue
					}
					require.NoError(t, p.Free(ptr))
				case 2:
					ptr, err := p.AllocAsync(n, s)
					if err != nil {
						assert.ErrorIs(t, err, accounting.ErrOutOfMemory)
						continue
					}
					require.NoError(t, p.Memset(ptr, 7, n))
					require.NoError(t, p.FreeAsync(ptr, s))
				case 3:
					_, err := p.Trim()
					require.NoError(t, err)
					_ = p.Stats()
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, s.Synchronize())
	require.NoError(t, p.Release())
	assert.Zero(t, p.Stats().Reserved)
}
