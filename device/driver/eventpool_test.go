package driver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// fakeEvent counts its Close calls.
type fakeEvent struct{ closed int }

func (e *fakeEvent) Synchronize() error                          { return nil }
func (e *fakeEvent) Query() (bool, error)                        { return true, nil }
func (e *fakeEvent) Elapsed(driver.Event) (time.Duration, error) { return 0, nil }
func (e *fakeEvent) Close() error                                { e.closed++; return nil }

// TestEventPoolReusesCompletedEventsOnly: a completed event comes back
// from Get; one whose work may not have completed, one past the bound and
// one put after Close are closed; Close closes what it held.
func TestEventPoolReusesCompletedEventsOnly(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(t, err)
	defer dev.Close()
	var p driver.EventPool
	done, failed := &fakeEvent{}, &fakeEvent{}
	require.NoError(t, p.Put(done, true))
	require.NoError(t, p.Put(failed, false))
	assert.Equal(t, 0, done.closed)
	assert.Equal(t, 1, failed.closed, "an event whose work may not have completed is closed")
	got, err := p.Get(dev)
	require.NoError(t, err)
	assert.Same(t, done, got)
	fresh, err := p.Get(dev)
	require.NoError(t, err)
	require.NoError(t, fresh.Close())

	held := make([]*fakeEvent, driver.MaxPooledEvents+1)
	for i := range held {
		held[i] = &fakeEvent{}
		require.NoError(t, p.Put(held[i], true))
	}
	assert.Equal(t, 1, held[driver.MaxPooledEvents].closed, "past the bound")
	require.NoError(t, p.Close())
	for _, e := range held[:driver.MaxPooledEvents] {
		assert.Equal(t, 1, e.closed, "closed by Close")
	}
	late := &fakeEvent{}
	require.NoError(t, p.Put(late, true))
	assert.Equal(t, 1, late.closed, "put after Close")
}
