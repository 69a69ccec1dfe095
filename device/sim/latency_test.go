package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// With latency, stream work completes Latency after it is queued, after
// the call that queued it has returned: the destination still holds its
// old bytes when the async call returns, and the new ones after
// Synchronize. Synchronous calls wait for their work, so they take at
// least the latency.
func TestLatency(t *testing.T) {
	const latency = 20 * time.Millisecond
	dev := newDevice(t, sim.Config{Memory: 1 << 20, Latency: latency})
	assert.Equal(t, latency, dev.Latency())
	const n = 4096
	p, err := dev.Malloc(n)
	require.NoError(t, err)
	defer dev.Free(p)
	old := testdev.RandomBytes(n)
	start := time.Now()
	require.NoError(t, dev.CopyHtoD(p, old))
	assert.GreaterOrEqual(t, time.Since(start), latency, "a synchronous copy waits for its work")
	assert.Equal(t, old, peek(t, dev, p, n), "and it is done when the call returns")

	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	ev, err := dev.NewEvent()
	require.NoError(t, err)
	defer ev.Close()
	fresh := testdev.RandomBytes(n)
	for _, step := range []struct {
		name  string
		queue func() error
	}{
		{"CopyHtoDAsync", func() error { return s.CopyHtoDAsync(p, fresh) }},
		{"MemsetAsync", func() error { return s.MemsetAsync(p, 0x77, n) }},
		{"Launch", func() error {
			return dev.Launch(s, []driver.Range{{Ptr: p, N: n}}, func(m [][]byte) error { m[0][0] ^= 0xff; return nil })
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			before := peek(t, dev, p, n)
			require.NoError(t, step.queue())
			require.NoError(t, s.Record(ev))
			done, err := ev.Query()
			require.NoError(t, err)
			assert.False(t, done, "the event records after the queued work")
			assert.Equal(t, before, peek(t, dev, p, n), "queued, not done")
			require.NoError(t, s.Synchronize())
			assert.NotEqual(t, before, peek(t, dev, p, n), "done after Synchronize")
		})
	}
	_, err = sim.New(sim.Config{Latency: -time.Second})
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}

// A bad request queued on a stream is the stream's error, never a panic
// in its goroutine (which would kill the process): a negative width in
// Memcpy3DAsync, and a kernel reference that panics.
func TestStreamWorkNeverPanics(t *testing.T) {
	dev := newDevice(t, sim.Config{Memory: 1 << 20, Latency: time.Millisecond})
	p, err := dev.Malloc(4096)
	require.NoError(t, err)
	defer dev.Free(p)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Memcpy3DAsync(devarray.Memcpy3D{Dst: devarray.Place{Dev: p}, Src: devarray.Place{Host: make([]byte, 64)},
		DstPitch: 64, SrcPitch: 64, DstHeight: 1, SrcHeight: 1, Width: -8, Height: 1, Depth: 1}))
	assert.ErrorIs(t, s.Synchronize(), driver.ErrInvalidValue)
	assert.ErrorIs(t, dev.Memcpy3D(devarray.Memcpy3D{Dst: devarray.Place{Dev: p}, Src: devarray.Place{Host: make([]byte, 64)},
		DstPitch: 64, SrcPitch: 64, DstHeight: 1, SrcHeight: 1, Width: -8, Height: 1, Depth: 1}), driver.ErrInvalidValue)
	require.NoError(t, dev.Launch(s, []driver.Range{{Ptr: p, N: 8}}, func(m [][]byte) error { _ = m[0][100]; return nil }))
	err = s.Synchronize()
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
	assert.Contains(t, err.Error(), "index out of range")
	for _, latency := range []time.Duration{0, time.Millisecond} {
		d := newDevice(t, sim.Config{Memory: 1 << 20, Latency: latency})
		q, err := d.Malloc(4096)
		require.NoError(t, err)
		assert.ErrorIs(t, d.Access([]driver.Range{{Ptr: q, N: 8}}, func(m [][]byte) error { _ = m[0][100]; return nil }), driver.ErrInvalidValue,
			"latency %v: a synchronous call whose work panics returns the error", latency)
		require.NoError(t, d.Free(q))
	}
}

func peek(t *testing.T, dev *sim.Device, p devarray.Ptr, n int64) []byte {
	t.Helper()
	b, err := dev.Peek(p, n)
	require.NoError(t, err)
	return b
}
