package transfer_test

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
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// Hostile input to every exported entry point of transfer: nil and zero
// values, negative and overflowing sizes, closed copiers and devices,
// concurrent Close. Each gets a typed error, never a panic, and leaves the
// ledger as it was.
func TestHostileInput(t *testing.T) {
	dev := testdev.Open(t)
	a, err := devarray.FromHost(dev, randomFloats(12), 3, 4)
	require.NoError(t, err)
	defer a.Free()
	host := make([]float32, 12)
	closed, err := transfer.New(dev)
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	var nilCopier *transfer.Copier
	var nilOp *transfer.Op
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()

	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"New(nil)", func() error { _, err := transfer.New(nil); return err }, device.ErrInvalidValue},
		{"WithRing negative chunk", func() error { _, err := transfer.New(dev, transfer.WithRing(-1, 2, 2)); return err }, device.ErrInvalidValue},
		{"WithRing negative chunks", func() error { _, err := transfer.New(dev, transfer.WithRing(4096, -2, 2)); return err }, device.ErrInvalidValue},
		{"WithRing negative streams", func() error { _, err := transfer.New(dev, transfer.WithRing(4096, 2, -1)); return err }, device.ErrInvalidValue},
		{"WithOptions negative", func() error {
			_, err := transfer.New(dev, transfer.WithOptions(transfer.Options{StagedMin: -1}))
			return err
		}, device.ErrInvalidValue},
		{"WithRing negative, then WithOptions", func() error {
			_, err := transfer.New(dev, transfer.WithRing(-1, 2, 2), transfer.WithOptions(transfer.Options{}))
			return err
		}, device.ErrInvalidValue},
		{"WithOptions with a bad profile", func() error {
			_, err := transfer.New(dev, transfer.WithOptions(transfer.Options{Profile: &transfer.Profile{Model: "x"}}))
			return err
		}, transfer.ErrProfile},
		{"negative ring on one copy", func() error {
			return transfer.Copy(transfer.Host(host, 3, 4), transfer.Dev(a), transfer.WithRing(math.MinInt64, 0, 0))
		}, device.ErrInvalidValue},
		{"nil Copier Copy", func() error { return nilCopier.Copy(transfer.Host(host, 3, 4), transfer.Dev(a)) }, device.ErrInvalidValue},
		{"nil Copier Plan", func() error { _, err := nilCopier.Plan(transfer.Host(host, 3, 4), transfer.Dev(a)); return err }, device.ErrInvalidValue},
		{"nil Copier CopyAsync", func() error {
			_, err := nilCopier.CopyAsync(s, transfer.Host(host, 3, 4), transfer.Dev(a))
			return err
		}, device.ErrInvalidValue},
		{"nil Op Wait", func() error { return nilOp.Wait() }, device.ErrInvalidValue},
		{"nil Op Done", func() error { _, err := nilOp.Done(); return err }, device.ErrInvalidValue},
		{"closed Copier Copy", func() error { return closed.Copy(transfer.Host(host, 3, 4), transfer.Dev(a)) }, transfer.ErrClosed},
		{"closed Copier CopyAsync", func() error {
			_, err := closed.CopyAsync(s, transfer.Host(host, 3, 4), transfer.Dev(a))
			return err
		}, transfer.ErrClosed},
		{"CopyAsync without a stream", func() error {
			_, err := closed.CopyAsync(nil, transfer.Host(host, 3, 4), transfer.Dev(a))
			return err
		}, device.ErrInvalidValue},
		{"host shape that overflows", func() error {
			return transfer.Copy(transfer.Host(host, math.MaxInt32, math.MaxInt32, math.MaxInt32), transfer.Dev(a))
		}, devarray.ErrOverflow},
		{"host shape larger than the memory", func() error { return transfer.Copy(transfer.Host(host, 4, 4), transfer.Dev(a)) }, devarray.ErrBounds},
		{"negative host dimension", func() error { return transfer.Copy(transfer.Host(host, -3, -4), transfer.Dev(a)) }, devarray.ErrShape},
		{"offset that overflows", func() error {
			return transfer.Copy(transfer.Dev(a), transfer.Host(host, 3, 4).Strided(math.MaxInt64, 16, 4))
		}, devarray.ErrBounds},
		{"strides that overflow", func() error {
			return transfer.Copy(transfer.Dev(a), transfer.Host(host, 3, 4).Strided(0, math.MaxInt64, math.MinInt64))
		}, devarray.ErrOverflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dev.Ledger().Snapshot()
			var err error
			require.NotPanics(t, func() { err = tc.call() })
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want, "%v", err)
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Zero(t, diff.Kinds[accounting.Device].Current+diff.Kinds[accounting.Pinned].Current, "nothing left allocated")
		})
	}
	assert.NoError(t, nilCopier.Close(), "closing a nil Copier is harmless")
	assert.Nil(t, nilCopier.Device())
}

// A device closed under a Copier: every copy after it is an error wrapping
// ErrClosed or ErrFreed (the arrays of a closed device are freed), and
// nothing touches the unmapped memory.
func TestCopierOfClosedDevice(t *testing.T) {
	dev, err := device.Open("sim:4?mem=16MiB&latency=" + testdev.SimLatency(testdev.Open(t)).String())
	require.NoError(t, err)
	c, err := transfer.New(dev)
	require.NoError(t, err)
	a, err := devarray.FromHost(dev, randomFloats(4096), 4096)
	require.NoError(t, err)
	host := randomFloats(4096)
	require.NoError(t, c.Copy(transfer.Dev(a), transfer.Host(host), transfer.Via(transfer.PathStaged)), "the ring exists")
	require.NoError(t, dev.Close())
	for _, path := range []transfer.Path{transfer.PathAuto, transfer.PathDirect, transfer.PathStaged} {
		err := c.Copy(transfer.Host(host), transfer.Dev(a), transfer.Via(path))
		require.Error(t, err, "%v", path)
		assert.True(t, errors.Is(err, device.ErrClosed) || errors.Is(err, devarray.ErrFreed), "%v: %v", path, err)
	}
	assert.NoError(t, c.Close(), "closing the copier of a closed device frees what it can and reports no error")
}

// Copies from many goroutines while the Copier is closed: each copy either
// completes with the right data or fails with ErrClosed; none panics or
// races (run with -race).
func TestConcurrentCopiesAndClose(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev, transfer.WithRing(4096, 3, 2))
	require.NoError(t, err)
	const workers, n = 8, 2048
	arrays := make([]*devarray.DevArray, workers)
	for i := range arrays {
		arrays[i], err = devarray.Empty(dev, devarray.Float32, n)
		require.NoError(t, err)
	}
	var wg, started sync.WaitGroup
	errs := make(chan error, workers*20)
	started.Add(workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			markStarted := func() { once.Do(started.Done) }
			defer markStarted()
			for j := range 20 {
				if j == 2 {
					markStarted() // Close comes while the others copy
				}
				want := randomFloats(n)
				path := []transfer.Path{transfer.PathDirect, transfer.PathStaged}[j%2]
				if err := c.Copy(transfer.Dev(arrays[i]), transfer.Host(want), transfer.Via(path)); err != nil {
					errs <- err
					return
				}
				got := make([]float32, n)
				if err := c.Copy(transfer.Host(got), transfer.Dev(arrays[i]), transfer.Via(path)); err != nil {
					errs <- err
					return
				}
				if !assert.Equal(t, want, got) {
					return
				}
			}
		}()
	}
	started.Wait()
	require.NoError(t, c.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.ErrorIs(t, err, transfer.ErrClosed)
	}
	for _, a := range arrays {
		require.NoError(t, a.Free())
	}
}
