package interop_test

import (
	"bytes"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

// blockedFor is how long a call must stay blocked to count as waiting.
const blockedFor = 30 * time.Millisecond

// pendingRig is async work held at a point: a memset of array a queued on
// a producer stream that sim.Pause holds, recorded in a Pending.
type pendingRig struct {
	dev      driver.Device
	pending  *interop.Pending
	producer driver.Stream
	a        *devarray.DevArray
	value    byte // what the memset writes
	resume   func()
	done     atomic.Int32 // calls of the work's done function
}

// newPendingRig queues the held memset of a fresh array of random bytes.
func newPendingRig(t *testing.T) *pendingRig {
	t.Helper()
	dev := testdev.Open(t)
	if !testdev.IsSim(dev) {
		// The tests make and read arrays synchronously while the producer
		// is held; on CUDA those calls run on the legacy default stream,
		// which waits for the held (blocking) producer stream.
		t.Skip("uploads synchronously while a blocking stream is held, which only sim's unordered streams allow; on a GPU python/test_gpu.py checks the exports")
	}
	r := &pendingRig{dev: dev, pending: &interop.Pending{}, value: byte(1 + rand.IntN(255))}
	r.a = randomArray(t, dev, 4096)
	r.producer, r.resume = heldStream(t, dev)
	require.NoError(t, r.producer.MemsetAsync(r.a.Ptr(), r.value, r.a.NBytes()))
	require.NoError(t, r.pending.Queued(dev, r.producer, func() error { r.done.Add(1); return nil }, r.a))
	t.Cleanup(func() { // nothing may stay pending when the device closes
		r.resume()
		assert.NoError(t, r.producer.Synchronize())
		assert.NoError(t, r.pending.Reap())
	})
	return r
}

// randomArray returns a device array of n fresh random bytes.
func randomArray(t *testing.T, dev driver.Device, n int) *devarray.DevArray {
	t.Helper()
	a, err := devarray.FromBytes(dev, testdev.RandomBytes(n), devarray.Uint8, n)
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	return a
}

// heldStream returns a new stream of dev held by testdev.Hold, and its resume.
func heldStream(t *testing.T, dev driver.Device) (driver.Stream, func()) {
	t.Helper()
	s, err := dev.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, testdev.Hold(t, s)
}

// filled returns n bytes of value v.
func filled(n int64, v byte) []byte { return bytes.Repeat([]byte{v}, int(n)) }

// returnsWhile runs f in a goroutine and reports whether it returned
// within blockedFor; wait returns f's error once it has returned.
func returnsWhile(f func() error) (returned bool, wait func() error) {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return true, func() error { return err }
	case <-time.After(blockedFor):
		return false, func() error { return <-ch }
	}
}

// With nothing queued, no call synchronizes or even looks at a stream.
func TestPendingNothingQueued(t *testing.T) {
	dev := testdev.Open(t)
	a := randomArray(t, dev, 256)
	var p interop.Pending
	assert.Zero(t, p.Len())
	s, err := p.ExportStream(a)
	assert.NoError(t, err)
	assert.Zero(t, s, "no stream to name")
	assert.NoError(t, p.Wait(a))
	assert.NoError(t, p.WaitOn(a, 0xdead), "no pending work: the consumer's stream is not even looked up")
	assert.ErrorIs(t, p.WaitOn(a, 0), interop.ErrInterface, "stream 0 is ambiguous")
	assert.NoError(t, p.Reap())
	assert.ErrorIs(t, p.Queued(nil, nil, nil, a), driver.ErrInvalidValue)
}

// CAI export: an array whose memory the held work touches names the
// producer's stream without waiting; one it does not touch names none.
func TestPendingExportStream(t *testing.T) {
	rig := newPendingRig(t)
	other := randomArray(t, rig.dev, 4096)
	view, err := rig.a.Slice(0, 1000, 2000)
	require.NoError(t, err)
	alias, err := devarray.Wrap(rig.dev, devarray.Descriptor{Ptr: rig.a.Ptr() + 4000, Shape: []int{500}, DType: devarray.Uint8, Device: rig.dev.DeviceID()})
	require.NoError(t, err)
	defer alias.Free()
	tests := []struct {
		name string
		arr  *devarray.DevArray
		want uintptr
	}{
		{"the array", rig.a, rig.producer.Handle()},
		{"a view of it", view, rig.producer.Handle()},
		{"other memory overlapping it", alias, rig.producer.Handle()},
		{"unrelated memory", other, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got uintptr
			returned, wait := returnsWhile(func() (err error) { got, err = rig.pending.ExportStream(tc.arr); return err })
			require.True(t, returned, "ExportStream must name the stream, not wait for it")
			require.NoError(t, wait())
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Equal(t, 1, rig.pending.Len())
	rig.resume()
	require.NoError(t, rig.producer.Synchronize())
	s, err := rig.pending.ExportStream(rig.a)
	require.NoError(t, err)
	assert.Zero(t, s, "done work is forgotten: nothing to wait for")
	assert.Zero(t, rig.pending.Len())
	assert.EqualValues(t, 1, rig.done.Load(), "the work's done function ran once")
}

// A consumer without a stream: the host waits for the work on the array's
// memory, and for nothing else.
func TestPendingWaitHost(t *testing.T) {
	rig := newPendingRig(t)
	other := randomArray(t, rig.dev, 64)
	returned, wait := returnsWhile(func() error { return rig.pending.Wait(other) })
	require.True(t, returned, "unrelated memory has nothing to wait for")
	require.NoError(t, wait())

	returned, wait = returnsWhile(func() error { return rig.pending.Wait(rig.a) })
	require.False(t, returned, "Wait returned while the work on the array was held")
	rig.resume()
	require.NoError(t, wait())
	assert.Equal(t, filled(rig.a.NBytes(), rig.value), peekArray(t, rig.a), "the host sees the work done")
	assert.Zero(t, rig.pending.Len())
	assert.EqualValues(t, 1, rig.done.Load())
}

// DLPack's stream argument: the consumer's stream waits on the device and
// the caller does not, whether the consumer's is a stream or the legacy
// default one.
func TestPendingWaitOnConsumer(t *testing.T) {
	rig := newPendingRig(t)
	consumer, err := rig.dev.NewStream()
	require.NoError(t, err)
	defer consumer.Close()
	legacy, err := rig.dev.ExternalStream(driver.LegacyDefaultStream)
	require.NoError(t, err)
	defer legacy.Close()
	for _, h := range []uintptr{consumer.Handle(), driver.LegacyDefaultStream} {
		returned, wait := returnsWhile(func() error { return rig.pending.WaitOn(rig.a, h) })
		require.True(t, returned, "WaitOn(%#x) must not block the caller", h)
		require.NoError(t, wait())
	}
	host := testdev.PageLocked(t, rig.dev, rig.a.NBytes()) // queued, not waited for
	require.NoError(t, consumer.CopyDtoHAsync(host, rig.a.Ptr()))
	read, err := rig.dev.NewEvent()
	require.NoError(t, err)
	defer read.Close()
	require.NoError(t, consumer.Record(read))
	returned, waitLegacy := returnsWhile(legacy.Synchronize)
	assert.False(t, returned, "the legacy default stream waits for the producer's work")
	ok, err := read.Query()
	require.NoError(t, err)
	assert.False(t, ok, "the consumer's read must wait for the producer's work")
	rig.resume()
	require.NoError(t, consumer.Synchronize())
	require.NoError(t, waitLegacy())
	assert.Equal(t, filled(int64(len(host)), rig.value), append([]byte(nil), host...), "the consumer read what the producer wrote")
	assert.ErrorIs(t, rig.pending.WaitOn(rig.a, 0), interop.ErrInterface)
}

// Work on several streams: CAI names the latest stream, and the host waits
// for the others first. The per-thread default stream is never named: it
// is another stream on the consumer's thread.
func TestPendingSeveralStreams(t *testing.T) {
	rig := newPendingRig(t)
	second, resumeSecond := heldStream(t, rig.dev)
	// The second stream's write comes after the producer's: without the
	// event the two writes race (check=streams reports it).
	after, err := rig.dev.NewEvent()
	require.NoError(t, err)
	defer after.Close()
	require.NoError(t, rig.producer.Record(after))
	require.NoError(t, second.WaitEvent(after))
	require.NoError(t, second.MemsetAsync(rig.a.Ptr(), rig.value+1, 16))
	require.NoError(t, rig.pending.Queued(rig.dev, second, nil, rig.a))
	var got uintptr
	returned, wait := returnsWhile(func() (err error) { got, err = rig.pending.ExportStream(rig.a); return err })
	require.False(t, returned, "the host waits for the older stream's work")
	rig.resume()
	require.NoError(t, wait())
	assert.Equal(t, second.Handle(), got, "the latest stream is named")
	resumeSecond()
	require.NoError(t, second.Synchronize())

	third, resumeThird := heldStream(t, rig.dev)
	require.NoError(t, third.MemsetAsync(rig.a.Ptr(), rig.value, 16))
	require.NoError(t, rig.pending.Queued(rig.dev, handleStream{third, driver.PerThreadDefaultStream}, nil, rig.a))
	returned, wait = returnsWhile(func() (err error) { got, err = rig.pending.ExportStream(rig.a); return err })
	assert.False(t, returned, "work on the per-thread default stream is waited for by the host")
	resumeThird()
	require.NoError(t, wait())
	assert.Zero(t, got)
	assert.Zero(t, rig.pending.Len())
}

// handleStream is a stream that says it has another handle.
type handleStream struct {
	driver.Stream
	h uintptr
}

func (s handleStream) Handle() uintptr { return s.h }

// peekArray reads an array's bytes as they are now.
func peekArray(t *testing.T, a *devarray.DevArray) []byte {
	t.Helper()
	return testdev.Peek(t, a.Backend().(driver.Device), a.Ptr(), a.NBytes())
}
