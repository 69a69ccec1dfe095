package pinned_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// openOwn opens a device of the test device's kind that the test closes
// itself; its memory is checked to be all freed by the device's Close.
func openOwn(t *testing.T) device.Device {
	t.Helper()
	dev := testdev.OpenOwned(t)
	t.Cleanup(func() {
		_ = dev.Close()
		snap := dev.Ledger().Snapshot()
		for k, s := range snap.Kinds {
			assert.Zero(t, s.Current, "%v bytes left after Close", accounting.Kind(k))
		}
	})
	return dev
}

// requireClosed checks that every use of a buffer whose device was closed
// is an error wrapping ErrClosed, and that no accessor hands out memory.
// It never reads the buffer's bytes: before the fix they were unmapped.
func requireClosed(t *testing.T, b *pinned.Buffer) {
	t.Helper()
	assert.True(t, b.Bytes() == nil, "Bytes of a buffer whose device was closed")
	assert.True(t, b.Float32() == nil, "Float32 of a buffer whose device was closed")
	assert.True(t, b.Complex64() == nil, "Complex64 of a buffer whose device was closed")
	assert.True(t, pinned.Slice[int16](b) == nil, "Slice of a buffer whose device was closed")
	assert.Zero(t, b.HostPtr(), "HostPtr of a buffer whose device was closed")
	assert.ErrorIs(t, b.Err(), device.ErrClosed)
	_, err := b.DevPtr()
	assert.ErrorIs(t, err, device.ErrClosed, "DevPtr")
	_, err = b.Array(devarray.Float32)
	assert.ErrorIs(t, err, device.ErrClosed, "Array")
	_, err = b.DeviceArray(devarray.Float32)
	assert.ErrorIs(t, err, device.ErrClosed, "DeviceArray")
	assert.ErrorIs(t, b.Guard(new(work)), device.ErrClosed, "Guard")
	busy, err := b.Busy()
	assert.False(t, busy, "nothing runs on a closed device")
	assert.ErrorIs(t, err, device.ErrClosed, "Busy")
	assert.ErrorIs(t, b.Free(), device.ErrClosed, "Free after the device's Close")
	assert.ErrorIs(t, b.Free(), device.ErrClosed, "a second Free says the same")
}

// A buffer used after its device is closed never touches the memory the
// Close unmapped (it was not marked freed, so Bytes and
// the typed slices handed out unmapped memory and a write was a SIGSEGV).
func TestBufferAfterDeviceClose(t *testing.T) {
	for _, flags := range []pinned.Flags{0, pinned.Mapped, pinned.WriteCombined | pinned.Portable} {
		t.Run(flags.String(), func(t *testing.T) {
			dev := openOwn(t)
			b, err := pinned.Alloc(dev, 8192, flags)
			require.NoError(t, err)
			b.Bytes()[0] = 1
			require.NoError(t, dev.Close())
			requireClosed(t, b)
			assert.Equal(t, int64(8192), b.Len(), "the size is still known")
			assert.Contains(t, b.String(), "8192")
		})
	}
}

// A registered buffer whose device was closed is unpinned and refuses
// every use; the memory stays the caller's.
func TestRegisteredAfterDeviceClose(t *testing.T) {
	dev := openOwn(t)
	mem := make([]byte, 10000)
	b, err := pinned.Register(dev, mem, 0)
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	assert.ErrorIs(t, b.Unregister(), device.ErrClosed)
	requireClosed(t, b)
	mem[9999] = 7 // still the caller's memory
}

// A pool whose device was closed hands out nothing, in particular not the
// cached memory the Close unmapped.
func TestPoolAfterDeviceClose(t *testing.T) {
	dev := openOwn(t)
	p, err := pinned.NewPool(dev, pinned.Mapped)
	require.NoError(t, err)
	a, err := p.Alloc(8192)
	require.NoError(t, err)
	a2, err := p.Alloc(8192)
	require.NoError(t, err)
	require.NoError(t, a.Free(), "cached")
	require.NoError(t, a2.Free(), "cached beside it, in the same class")
	require.Equal(t, 2*pinned.SizeClass(8192), dev.Ledger().Snapshot().Kinds[accounting.Mapped].Cached)
	live, err := p.Alloc(4096)
	require.NoError(t, err)
	require.NoError(t, dev.Close())

	_, err = p.Alloc(8192)
	require.ErrorIs(t, err, device.ErrClosed, "a pool hands out no cached block of a closed device")
	_, err = p.Alloc(100)
	require.ErrorIs(t, err, device.ErrClosed)
	requireClosed(t, live)
	_, err = p.Trim()
	assert.ErrorIs(t, err, device.ErrClosed, "Trim")
	assert.ErrorIs(t, p.Close(), device.ErrClosed, "Close")
	st := p.Stats()
	assert.Zero(t, st.Cached, "the cache went with the device")
	assert.Zero(t, st.Live, "the live buffer went with the device")
	assert.Zero(t, st.InUse)
	assert.Zero(t, dev.Ledger().Snapshot().Kinds[accounting.Mapped].Cached, "the ledger's cached bytes too")
}

// A buffer freed to a pool before the device closed, and a pool closed
// before its device, are not affected by the device's Close.
func TestCloseInOrderIsClean(t *testing.T) {
	dev := openOwn(t)
	p, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	a, err := p.Alloc(100)
	require.NoError(t, err)
	b, err := pinned.Alloc(dev, 100, 0)
	require.NoError(t, err)
	require.NoError(t, a.Free())
	require.NoError(t, b.Free())
	require.NoError(t, p.Close())
	require.NoError(t, dev.Close())
	require.NoError(t, a.Free(), "freed before the Close: Free stays a no-op")
	require.NoError(t, b.Free())
	assert.ErrorIs(t, b.Err(), pinned.ErrFreed)
	require.NoError(t, p.Close(), "closed before the device")
}

// A failed async copy does not keep its buffer from being freed (the
// first Free re-reported the copy's error and freed nothing).
// Both orders: Free after the copy failed, and Free while it runs, then
// again after it failed.
func TestFreeAfterFailedCopy(t *testing.T) {
	copyErr := errors.New("copy failed")
	t.Run("free after the copy failed", func(t *testing.T) {
		dev := testdev.Open(t)
		b, err := pinned.Alloc(dev, 4096, 0)
		require.NoError(t, err)
		w := &failedWork{err: copyErr}
		w.done.Store(true)
		require.NoError(t, b.Guard(w))
		err = b.Free()
		assert.ErrorIs(t, err, copyErr, "the first Free reports the copy's error")
		assert.NotErrorIs(t, err, pinned.ErrBusy)
		assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "and frees")
		require.NoError(t, b.Free(), "the error is reported once")
		assert.ErrorIs(t, b.Err(), pinned.ErrFreed)
	})
	t.Run("free while the copy runs", func(t *testing.T) {
		dev := testdev.Open(t)
		b, err := pinned.Alloc(dev, 4096, 0)
		require.NoError(t, err)
		w := &failedWork{err: copyErr}
		require.NoError(t, b.Guard(w))
		assert.ErrorIs(t, b.Free(), pinned.ErrBusy)
		assert.Equal(t, int64(4096), dev.Ledger().Current(accounting.Pinned))
		assert.ErrorIs(t, w.Wait(), copyErr)
		assert.ErrorIs(t, b.Free(), copyErr, "frees and reports the copy's error")
		assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
		require.NoError(t, b.Free())
	})
	t.Run("registered", func(t *testing.T) {
		dev := testdev.Open(t)
		b, err := pinned.Register(dev, make([]byte, 4096), 0)
		require.NoError(t, err)
		w := &failedWork{err: copyErr}
		w.done.Store(true)
		require.NoError(t, b.Guard(w))
		assert.ErrorIs(t, b.Unregister(), copyErr)
		assert.Zero(t, dev.Ledger().Current(accounting.Registered))
		require.NoError(t, b.Unregister())
	})
}

// A pool block whose async copy failed is reused once the copy is done;
// the copy's error belongs to the copy (its Op), not to the next Alloc.
// Before the fix every later Alloc of the class failed with it, forever.
func TestPoolReusesBlockOfFailedCopy(t *testing.T) {
	dev := testdev.Open(t)
	p, err := pinned.NewPool(dev, 0)
	require.NoError(t, err)
	defer p.Close()
	a, err := p.Alloc(4096)
	require.NoError(t, err)
	w := &failedWork{err: errors.New("copy failed")}
	require.NoError(t, a.Guard(w))
	ptr := a.HostPtr()
	require.NoError(t, a.Free())
	w.done.Store(true)
	for range 3 {
		b, err := p.Alloc(4096)
		require.NoError(t, err, "the failed copy's error is not the pool's")
		assert.Equal(t, ptr, b.HostPtr(), "the block is reused")
		require.NoError(t, b.Free())
	}
	assert.Equal(t, int64(1), p.Stats().FromDriver)
}

// failedWork is an async copy that fails: Done reports its error once done.
type failedWork struct {
	work
	err error
}

func (w *failedWork) Done() (bool, error) {
	if !w.done.Load() {
		return false, nil
	}
	return true, w.err
}

func (w *failedWork) Wait() error { w.done.Store(true); return w.err }

// The same with a real async copy that fails on its stream (sim's fault
// injection): the buffer it used is freed by the first Free after the
// copy, whichever of Wait and Free comes first.
func TestFreeAfterFailedAsyncCopy(t *testing.T) {
	for _, waitFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "wait then free", false: "free then wait"}[waitFirst], func(t *testing.T) {
			dev := testdev.Open(t)
			faulty, ok := dev.(interface{ FailCopy(int64) })
			if !ok {
				t.Skipf("%v cannot inject a failed copy", dev.DeviceID())
			}
			a, err := devarray.Empty(dev, devarray.Float32, 1024)
			require.NoError(t, err)
			defer a.Free()
			b, err := pinned.Alloc(dev, 4096, 0)
			require.NoError(t, err)
			c, err := transfer.New(dev)
			require.NoError(t, err)
			defer c.Close()
			s, err := dev.NewStream()
			require.NoError(t, err)
			defer s.Close()
			faulty.FailCopy(1)
			defer faulty.FailCopy(0)
			op, err := c.CopyAsync(s, transfer.Dev(a), transfer.Pinned(b, devarray.Float32))
			if err != nil {
				require.ErrorIs(t, err, device.ErrInjected, "failed when queued")
			}
			if waitFirst && op != nil {
				assert.ErrorIs(t, op.Wait(), device.ErrInjected)
			}
			err = b.Free()
			for errors.Is(err, pinned.ErrBusy) { // the copy was still queued
				require.False(t, waitFirst, "Free after Wait is never busy")
				if op != nil {
					_ = op.Wait()
				}
				err = b.Free()
			}
			assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "the first Free after the copy frees: %v", err)
			require.NoError(t, b.Free())
			if !waitFirst && op != nil {
				_ = op.Wait() // ends the op; whether it still reports the failure is package transfer's business
			}
		})
	}
}
