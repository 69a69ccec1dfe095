package interop_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

// producerRig is a producer stream held (testdev.Hold) with a memset queued
// behind the hold, and the CAI of the array it writes, naming that stream.
type producerRig struct {
	dev    driver.Device
	a      *devarray.DevArray
	cai    map[string]any
	resume func()
}

func newProducerRig(t *testing.T) *producerRig {
	dev := testdev.Open(t)
	a, err := devarray.FromBytes(dev, testdev.RandomBytes(4096), devarray.Uint8, 4096)
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	producer, err := dev.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { producer.Close() })
	resume := testdev.Hold(t, producer)
	require.NoError(t, producer.MemsetAsync(a.Ptr(), 7, a.NBytes()))
	cai, err := interop.ExportCAI(a, producer.Handle())
	require.NoError(t, err)
	return &producerRig{dev: dev, a: a, cai: cai, resume: resume}
}

func sevens(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 7
	}
	return b
}

// A consumer stream's work after the import waits for the producer's
// stream; the caller is not blocked.
func TestImportCAIOnConsumerStream(t *testing.T) {
	rig := newProducerRig(t)
	consumer, err := rig.dev.NewStream()
	require.NoError(t, err)
	defer consumer.Close()
	b, err := interop.ImportCAIOn(rig.dev, consumer, rig.cai)
	require.NoError(t, err)
	// Page-locked, so that the copy is queued: a copy into pageable
	// memory returns only once complete, Async too, and here would wait
	// for the held producer (it hung on an H100).
	host := testdev.PageLocked(t, rig.dev, b.NBytes())
	require.NoError(t, consumer.CopyDtoHAsync(host, b.Ptr()))
	done, err := rig.dev.NewEvent()
	require.NoError(t, err)
	require.NoError(t, consumer.Record(done))
	time.Sleep(20 * time.Millisecond)
	ok, err := done.Query()
	require.NoError(t, err)
	assert.False(t, ok, "the consumer must not read before the producer's memset")
	rig.resume()
	require.NoError(t, consumer.Synchronize())
	assert.Equal(t, sevens(len(host)), append([]byte(nil), host...), "the consumer read what the producer wrote")
}

// With no consumer stream, the import returns once the producer is done.
func TestImportCAIOnHost(t *testing.T) {
	rig := newProducerRig(t)
	imported := make(chan *devarray.DevArray)
	go func() {
		b, err := interop.ImportCAIOn(rig.dev, nil, rig.cai)
		assert.NoError(t, err)
		imported <- b
	}()
	select {
	case <-imported:
		t.Fatal("the import returned while the producer's stream still had work")
	case <-time.After(20 * time.Millisecond):
	}
	rig.resume()
	b := <-imported
	got, err := devarray.ToHost[uint8](b)
	require.NoError(t, err)
	assert.Equal(t, sevens(len(got)), got)
}

// The default stream handles are accepted, no stream is no wait, and an
// unknown handle is an error that frees nothing of the producer's.
func TestWaitStreamDefaults(t *testing.T) {
	dev := testdev.Open(t)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	assert.NotZero(t, s.Handle())
	for _, h := range []uintptr{0, driver.LegacyDefaultStream, driver.PerThreadDefaultStream, s.Handle()} {
		assert.NoError(t, interop.WaitStream(dev, h, nil), "handle %#x", h)
		assert.NoError(t, interop.WaitStream(dev, h, s), "handle %#x", h)
	}
	if testdev.IsSim(dev) {
		assert.ErrorIs(t, interop.WaitStream(dev, 0xdead, nil), driver.ErrInvalidValue)
	}
	a, err := devarray.FromHost(dev, randomFloats(8))
	require.NoError(t, err)
	defer a.Free()
	m, err := interop.ExportCAI(a, s.Handle())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	if testdev.IsSim(dev) {
		_, err = interop.ImportCAIOn(dev, nil, m)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "the producer's stream is gone")
		require.NoError(t, a.Err(), "the producer's memory is untouched")
	}
}
