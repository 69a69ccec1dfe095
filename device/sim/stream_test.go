package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

func TestStreamRunsInOrder(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 1 << 16
	a, err := dev.Malloc(n)
	require.NoError(t, err)
	b, err := dev.Malloc(n)
	require.NoError(t, err)

	src := randomBytes(n)
	out := make([]byte, n)
	// Each step depends on the one before: only in-order execution gives src back.
	require.NoError(t, s.CopyHtoDAsync(a, src))
	require.NoError(t, s.CopyDtoDAsync(b, a, n))
	require.NoError(t, s.MemsetAsync(a, 0, n))
	require.NoError(t, s.Memcpy2DAsync(devarray.Memcpy2D{Dst: devarray.Place{Dev: a}, DstPitch: 256, Src: devarray.Place{Dev: b}, SrcPitch: 256, Width: 256, Height: n / 256}))
	require.NoError(t, s.CopyDtoHAsync(out, a))
	require.NoError(t, s.Synchronize())
	assert.Equal(t, src, out)

	snap := dev.Ledger().Snapshot()
	assert.Equal(t, int64(n), snap.CopyTotal(accounting.HtoD).Bytes, "async copies are counted like sync ones")
	assert.Equal(t, int64(2*n), snap.CopyTotal(accounting.DtoD).Bytes)
	assert.Equal(t, int64(n), snap.CopyTotal(accounting.DtoH).Bytes)
	require.NoError(t, dev.Free(a))
	require.NoError(t, dev.Free(b))
}

func TestStreamErrorsAtSynchronize(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	s, err := dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.CopyHtoDAsync(0x42, randomBytes(8)), "enqueueing succeeds; the work fails later")
	err = s.Synchronize()
	assert.ErrorIs(t, err, driver.ErrInvalidPointer)
	assert.NoError(t, s.Synchronize(), "the error is reported once")

	require.NoError(t, s.MemsetAsync(0x42, 0, 1))
	assert.ErrorIs(t, dev.Synchronize(), driver.ErrInvalidPointer, "Device.Synchronize reports stream errors")
	require.NoError(t, s.CopyDtoHAsync(make([]byte, 1), 0x42))
	assert.ErrorIs(t, s.Close(), driver.ErrInvalidPointer, "Close reports what was not yet reported")
	assert.NoError(t, s.Close())
	assert.ErrorIs(t, s.Synchronize(), driver.ErrClosed)
}

func TestEvents(t *testing.T) {
	dev := newDevice(t, sim.Config{})
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	start, err := dev.NewEvent()
	require.NoError(t, err)
	end, err := dev.NewEvent()
	require.NoError(t, err)

	done, err := end.Query()
	require.NoError(t, err)
	assert.True(t, done, "an event never recorded is complete")

	gate, err := dev.NewStream()
	require.NoError(t, err)
	defer gate.Close()
	block, err := dev.NewEvent()
	require.NoError(t, err)
	hold := make([]byte, 1<<22)
	p, err := dev.Malloc(int64(len(hold)))
	require.NoError(t, err)
	defer dev.Free(p)

	require.NoError(t, s.Record(start))
	require.NoError(t, s.CopyHtoDAsync(p, hold))
	require.NoError(t, s.Record(end))
	require.NoError(t, end.Synchronize())
	done, err = end.Query()
	require.NoError(t, err)
	assert.True(t, done)
	el, err := end.Elapsed(start)
	require.NoError(t, err)
	assert.Greater(t, el, time.Duration(0), "the copy between the events took time")

	// WaitEvent: work on gate waits for block, which s records after its copy.
	require.NoError(t, s.CopyHtoDAsync(p, randomBytes(len(hold))))
	require.NoError(t, s.Record(block))
	out := make([]byte, 16)
	require.NoError(t, gate.WaitEvent(block))
	require.NoError(t, gate.CopyDtoHAsync(out, p))
	require.NoError(t, gate.Synchronize())
	first := make([]byte, 16)
	require.NoError(t, dev.CopyDtoH(first, p))
	assert.Equal(t, first, out, "gate's copy ran after s's upload")

	other := newDevice(t, sim.Config{})
	foreign, err := other.NewEvent()
	require.NoError(t, err)
	assert.ErrorIs(t, s.Record(foreign), driver.ErrInvalidValue)
	assert.ErrorIs(t, s.WaitEvent(foreign), driver.ErrInvalidValue)
	_, err = end.Elapsed(foreign)
	assert.ErrorIs(t, err, driver.ErrInvalidValue)

	require.NoError(t, start.Close())
	assert.ErrorIs(t, s.Record(start), driver.ErrClosed)
}
