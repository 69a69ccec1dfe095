package pool_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// eventCounter is a device that counts the events made on it and the ones
// closed. Its events wrap the device's; its streams (stream) hand the
// device's own event to Record and WaitEvent.
type eventCounter struct {
	driver.Device
	mu     sync.Mutex
	made   int
	closed map[*countedEvent]int
}

type countedEvent struct {
	driver.Event
	d *eventCounter
}

func (d *eventCounter) NewEvent() (driver.Event, error) {
	ev, err := d.Device.NewEvent()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.made++
	return &countedEvent{Event: ev, d: d}, nil
}

func (e *countedEvent) Close() error {
	e.d.mu.Lock()
	e.d.closed[e]++
	e.d.mu.Unlock()
	return e.Event.Close()
}

// counts returns the events made and the events closed (each once).
func (d *eventCounter) counts() (made, closed int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.closed {
		closed += min(n, 1)
	}
	return d.made, closed
}

// eventStream is a stream of an eventCounter's device.
type eventStream struct{ driver.Stream }

func inner(e driver.Event) driver.Event {
	if c, ok := e.(*countedEvent); ok {
		return c.Event
	}
	return e
}

func (s eventStream) Record(e driver.Event) error    { return s.Stream.Record(inner(e)) }
func (s eventStream) WaitEvent(e driver.Event) error { return s.Stream.WaitEvent(inner(e)) }

// The events a pool records for frees on streams are reused once the
// streams pass them, also when a block is split while pending (its rest
// waits on the same events), so a program that frees on streams in a loop
// makes no more events after its first round; and Release closes every
// event the pool made, none twice.
func TestEventsAreReusedAndClosed(t *testing.T) {
	dev := &eventCounter{Device: testdev.Open(t), closed: map[*countedEvent]int{}}
	var streams [2]eventStream
	for i := range streams {
		s, err := dev.NewStream()
		require.NoError(t, err)
		defer func() { assert.NoError(t, s.Close()) }()
		streams[i] = eventStream{s}
	}
	s1, s2 := streams[0], streams[1]
	p := pool.New(dev)
	const blocks = 6
	// One large segment, the only block of its class that fits big/2.
	big := int64(12<<20 + 256*rand.IntN(4096))
	made := -1
	for round := range 12 {
		var held []int64 // sizes, random each round; the number of frees is not
		var ptrs []devarray.Ptr
		for range blocks {
			n := int64(1 + rand.IntN(1<<20)) // small: not of big's class
			ptr, err := p.AllocAsync(n, s1)
			require.NoError(t, err)
			require.NoError(t, p.CopyHtoD(ptr, testdev.RandomBytes(int(min(n, 4096)))))
			held, ptrs = append(held, n), append(ptrs, ptr)
		}
		// A large block freed on s1 and taken back, smaller, by s1 before
		// s1 passes the free: split while pending, its rest on the same events.
		b, err := p.AllocAsync(big, s1)
		require.NoError(t, err)
		resume := testdev.Hold(t, s1.Stream) // s1 cannot pass b's free
		require.NoError(t, p.FreeAsync(b, nil))
		c, err := p.AllocAsync(big/2, s1)
		require.NoError(t, err)
		assert.Equal(t, b, c, "round %d: s1 reuses the block it freed", round)
		require.Equal(t, 1, p.Stats().PendingBlocks, "round %d: the rest of b waits for s1", round)
		resume()
		for i, ptr := range ptrs {
			on := []driver.Stream{nil, s1, s2}[i%3] // own stream, or another: two events
			require.NoError(t, p.FreeAsync(ptr, on), "round %d: free %d bytes", round, held[i])
		}
		require.NoError(t, p.FreeAsync(c, s2))
		require.NoError(t, s1.Synchronize())
		require.NoError(t, s2.Synchronize())
		n, _ := dev.counts()
		if round == 0 {
			made = n
			require.Positive(t, made, "frees on streams record events")
			continue
		}
		assert.Equal(t, made, n, "round %d: the events of earlier rounds are reused, none made", round)
	}
	require.NoError(t, p.Release())
	n, closed := dev.counts()
	assert.Equal(t, n, closed, "Release closes every event the pool made")
	for ev, times := range dev.closed {
		assert.Equal(t, 1, times, "event %p closed once", ev)
	}
}
