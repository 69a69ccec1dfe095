package pinned_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/hostile"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
)

// Every exported function and method of pinned, given nil, zero, negative,
// overflowing, freed and closed inputs, returns a typed error (zero values
// where it returns none) and leaks nothing (testdev checks the ledger).
func TestHostileInputs(t *testing.T) {
	dev := testdev.Open(t)
	var nilBuf *pinned.Buffer
	zeroBuf := new(pinned.Buffer)
	var nilPool *pinned.Pool
	zeroPool := new(pinned.Pool)
	freed, err := pinned.Alloc(dev, 4096, pinned.Mapped)
	require.NoError(t, err)
	require.NoError(t, freed.Free())
	pool, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	defer pool.Close()
	fromPool, err := pool.Alloc(100)
	require.NoError(t, err)
	require.NoError(t, fromPool.Free())
	unmapped, err := pinned.Alloc(dev, 4096, 0)
	require.NoError(t, err)
	defer unmapped.Free()
	closedDev, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	require.NoError(t, closedDev.Close())
	big := int64(math.MaxInt64)

	var cases []hostile.Case
	for _, bad := range []struct {
		name string
		b    *pinned.Buffer
	}{{"nil", nilBuf}, {"zero", zeroBuf}} {
		b := bad.b
		add := func(name string, want error, call func() error) {
			cases = append(cases, hostile.Case{bad.name + " Buffer " + name, call, want})
		}
		add("Err", pinned.ErrNil, b.Err)
		add("DevPtr", pinned.ErrNil, func() error { return hostile.Second(b.DevPtr()) })
		add("Array", pinned.ErrNil, func() error { return hostile.Second(b.Array(devarray.Float32)) })
		add("DeviceArray", pinned.ErrNil, func() error { return hostile.Second(b.DeviceArray(devarray.Float32)) })
		add("Guard", pinned.ErrNil, func() error { return b.Guard(new(work)) })
		add("Busy", pinned.ErrNil, func() error { return hostile.Second(b.Busy()) })
		add("Unregister", pinned.ErrNil, b.Unregister)
		add("accessors", nil, func() error {
			assert.Zero(t, b.Len())
			assert.Zero(t, b.Flags())
			assert.False(t, b.Registered())
			assert.False(t, b.Mapped())
			assert.Nil(t, b.Bytes())
			assert.Nil(t, b.Float32())
			assert.Nil(t, b.Float64())
			assert.Nil(t, b.Int32())
			assert.Nil(t, b.Int64())
			assert.Nil(t, b.Uint16())
			assert.Nil(t, b.Complex64())
			assert.Nil(t, pinned.Slice[uint8](b))
			assert.Zero(t, b.HostPtr())
			assert.NotEmpty(t, b.String())
			return nil
		})
	}
	for _, bad := range []struct {
		name string
		p    *pinned.Pool
	}{{"nil", nilPool}, {"zero", zeroPool}} {
		p := bad.p
		add := func(name string, want error, call func() error) {
			cases = append(cases, hostile.Case{bad.name + " Pool " + name, call, want})
		}
		add("Alloc", pinned.ErrNil, func() error { return hostile.Second(p.Alloc(10)) })
		add("Trim", pinned.ErrNil, func() error { return hostile.Second(p.Trim()) })
		add("Close", pinned.ErrNil, p.Close)
		add("Stats", nil, func() error { assert.Zero(t, p.Stats()); return nil })
	}
	cases = append(cases,
		hostile.Case{"nil Buffer Free", nilBuf.Free, nil},
		hostile.Case{"zero Buffer Free", zeroBuf.Free, pinned.ErrNil},
		hostile.Case{"nil Buffer Device", func() error { assert.Nil(t, nilBuf.Device()); return nil }, nil},

		// Alloc, Register, NewPool.
		hostile.Case{"Alloc no device", func() error { return hostile.Second(pinned.Alloc(nil, 10, 0)) }, driver.ErrInvalidValue},
		hostile.Case{"Alloc 0", func() error { return hostile.Second(pinned.Alloc(dev, 0, 0)) }, driver.ErrInvalidValue},
		hostile.Case{"Alloc negative", func() error { return hostile.Second(pinned.Alloc(dev, -1, 0)) }, driver.ErrInvalidValue},
		hostile.Case{"Alloc MinInt64", func() error { return hostile.Second(pinned.Alloc(dev, math.MinInt64, 0)) }, driver.ErrInvalidValue},
		hostile.Case{"Alloc MaxInt64", func() error {
			_, err := pinned.Alloc(dev, big, 0)
			// sim says ENOMEM as mmap does; the driver says out of memory.
			if errors.Is(err, syscall.ENOMEM) || errors.Is(err, accounting.ErrOutOfMemory) {
				return nil
			}
			return fmt.Errorf("want out of memory, got %w", err)
		}, nil},
		hostile.Case{"Alloc unknown flags", func() error { return hostile.Second(pinned.Alloc(dev, 10, 0xff)) }, driver.ErrInvalidValue},
		hostile.Case{"Alloc closed", func() error { return hostile.Second(pinned.Alloc(closedDev, 10, 0)) }, pinned.ErrClosed},
		hostile.Case{"Register no device", func() error { return hostile.Second(pinned.Register(nil, make([]byte, 8), 0)) }, driver.ErrInvalidValue},
		hostile.Case{"Register nil memory", func() error { return hostile.Second(pinned.Register(dev, nil, 0)) }, driver.ErrInvalidValue},
		hostile.Case{"Register write-combined", func() error { return hostile.Second(pinned.Register(dev, make([]byte, 8), pinned.WriteCombined)) }, driver.ErrInvalidValue},
		hostile.Case{"Register closed", func() error { return hostile.Second(pinned.Register(closedDev, make([]byte, 8), 0)) }, pinned.ErrClosed},
		hostile.Case{"Register twice", func() error {
			mem := make([]byte, 64)
			b, err := pinned.Register(dev, mem, 0)
			require.NoError(t, err)
			defer b.Unregister()
			return hostile.Second(pinned.Register(dev, mem[8:], 0))
		}, driver.ErrInvalidValue},
		hostile.Case{"NewPool no device", func() error { return hostile.Second(pinned.NewPool(nil, 0)) }, driver.ErrInvalidValue},
		hostile.Case{"NewPool unknown flags", func() error { return hostile.Second(pinned.NewPool(dev, 1<<7)) }, driver.ErrInvalidValue},
		hostile.Case{"NewPool closed", func() error { return hostile.Second(pinned.NewPool(closedDev, 0)) }, pinned.ErrClosed},
		hostile.Case{"Pool Alloc 0", func() error { return hostile.Second(pool.Alloc(0)) }, driver.ErrInvalidValue},
		hostile.Case{"Pool Alloc negative", func() error { return hostile.Second(pool.Alloc(-4096)) }, driver.ErrInvalidValue},
		hostile.Case{"Pool Alloc MaxInt64", func() error { return hostile.Second(pool.Alloc(big)) }, driver.ErrInvalidValue},
		hostile.Case{"Pool Alloc past the ledger's limit", func() error {
			require.NoError(t, dev.Ledger().SetLimit(accounting.Pinned, 1<<20))
			defer dev.Ledger().SetLimit(accounting.Pinned, 0)
			return hostile.Second(pool.Alloc(2 << 20))
		}, accounting.ErrOutOfMemory},
		hostile.Case{"SizeClass extremes", func() error {
			assert.Equal(t, int64(-1), pinned.SizeClass(big), "no class near MaxInt64")
			assert.Equal(t, int64(4096), pinned.SizeClass(-1))
			assert.Equal(t, int64(4096), pinned.SizeClass(math.MinInt64))
			assert.Positive(t, pinned.SizeClass(1<<62))
			return nil
		}, nil},

		// Freed buffers.
		hostile.Case{"freed Free", freed.Free, nil},
		hostile.Case{"freed Err", freed.Err, pinned.ErrFreed},
		hostile.Case{"freed DevPtr", func() error { return hostile.Second(freed.DevPtr()) }, pinned.ErrFreed},
		hostile.Case{"freed Array", func() error { return hostile.Second(freed.Array(devarray.Float32)) }, pinned.ErrFreed},
		hostile.Case{"freed DeviceArray", func() error { return hostile.Second(freed.DeviceArray(devarray.Float32)) }, pinned.ErrFreed},
		hostile.Case{"freed Guard", func() error { return freed.Guard(new(work)) }, pinned.ErrFreed},
		hostile.Case{"freed pool buffer Guard", func() error { return fromPool.Guard(new(work)) }, pinned.ErrFreed},
		hostile.Case{"freed pool buffer Free", fromPool.Free, nil},
		hostile.Case{"freed Unregister", freed.Unregister, driver.ErrInvalidPointer},
		hostile.Case{"freed accessors", func() error {
			assert.Nil(t, freed.Bytes())
			assert.Nil(t, freed.Float32())
			assert.Zero(t, freed.HostPtr())
			assert.Nil(t, fromPool.Bytes())
			return nil
		}, nil},

		// Bad arguments to live buffers.
		hostile.Case{"Guard nil", func() error { return unmapped.Guard(nil) }, driver.ErrInvalidValue},
		hostile.Case{"DevPtr unmapped", func() error { return hostile.Second(unmapped.DevPtr()) }, pinned.ErrUnmapped},
		hostile.Case{"DeviceArray unmapped", func() error { return hostile.Second(unmapped.DeviceArray(devarray.Float32)) }, pinned.ErrUnmapped},
		hostile.Case{"Array invalid dtype", func() error { return hostile.Second(unmapped.Array(devarray.Invalid)) }, devarray.ErrDType},
		hostile.Case{"Array past the buffer", func() error { return hostile.Second(unmapped.Array(devarray.Float32, 1025)) }, devarray.ErrBounds},
		hostile.Case{"Array negative", func() error { return hostile.Second(unmapped.Array(devarray.Float32, -1)) }, devarray.ErrShape},
		hostile.Case{"Array overflow", func() error { return hostile.Second(unmapped.Array(devarray.Float32, math.MaxInt, 2)) }, devarray.ErrOverflow},
		hostile.Case{"Unregister allocated", unmapped.Unregister, driver.ErrInvalidPointer},
	)
	hostile.Run(t, cases)
}

// Concurrent hostile use of buffers and a pool: Free, Guard, Busy, views
// and pool traffic from many goroutines. Nothing panics, the race detector
// finds nothing, errors are ErrFreed or ErrBusy, and every byte is freed
// (testdev checks the ledger).
func TestHostileConcurrentUse(t *testing.T) {
	dev := testdev.Open(t)
	pool, err := pinned.NewPool(dev, pinned.Mapped)
	require.NoError(t, err)
	for range 20 {
		b, err := pinned.Alloc(dev, 4096, pinned.Mapped)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				switch g % 6 {
				case 0:
					err = b.Free()
				case 1:
					w := new(work)
					if err = b.Guard(w); err == nil {
						w.done.Store(true)
					}
				case 2:
					_, err = b.Busy()
				case 3:
					_, err = b.DeviceArray(devarray.Float32)
				case 4:
					_ = b.Bytes()
					_ = b.HostPtr()
					err = b.Err()
				case 5:
					var pb *pinned.Buffer
					if pb, err = pool.Alloc(int64(1000 * (g + 1))); err == nil {
						err = pb.Free()
					}
				}
				if err != nil && !errors.Is(err, pinned.ErrBusy) { // a Free between a Guard and its work's end: busy
					assert.ErrorIs(t, err, pinned.ErrFreed)
				}
			}()
		}
		wg.Wait()
		for err := b.Free(); err != nil; err = b.Free() {
			require.ErrorIs(t, err, pinned.ErrBusy) // a Guard's work finishes at once
		}
	}
	require.NoError(t, pool.Close())
}
